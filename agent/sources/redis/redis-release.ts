import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import { escapeBytes } from "../../core/escape";
import type { KeySample } from "./redis-port";

/** Strings longer than this are not compared and deleted: a token is short, a blob is not a lock to force-free. */
export const MAX_RELEASE_VALUE_BYTES = 64 * 1024;

/** The only writes lockscope makes, each a single atomic Lua call (lua/*.lua). */
export interface RedisReleasePort {
  /** The whole string value, or null when gone or longer than maxBytes. */
  fullString(key: Buffer, maxBytes: number): Promise<Buffer | null>;
  /** compare-and-delete-1.lua: 1 when deleted. */
  compareAndDelete(key: Buffer, token: Buffer): Promise<number>;
  /** purge-fair-waiter-2.lua: 1 removed, 0 not queued, -1 refused (deadline not passed). */
  purgeFairWaiter(queue: Buffer, timeouts: Buffer, entry: Buffer): Promise<number>;
  /** delete-if-hash-field-1.lua: 1 when deleted. */
  deleteIfHashField(key: Buffer, field: Buffer, channel: string, message: string): Promise<number>;
}

export type ReleasePlan =
  | { kind: "string"; steps: string[] }
  | { kind: "hash"; field: Buffer; channel: string; steps: string[] }
  | { kind: "refuse"; result: ReleaseResult };

const refuse = (outcome: ReleaseResult["outcome"], message: string): ReleasePlan => ({
  kind: "refuse",
  result: { outcome, message, plan: [], perNode: [] },
});

/**
 * Decides, from a fresh read of the key, what a force-release may delete. Pure: the source does the reads and
 * writes. `owner` is the owner the recognisers make of the fresh sample (escaped, as shown to the operator).
 */
export function planRelease(
  sample: KeySample,
  owner: string | null,
  library: string,
  cmd: ReleaseCommand,
  source: string,
): ReleasePlan {
  if (sample.pttl === -2 || sample.type === "none")
    return refuse("nothing-to-do", "the key is gone: nothing to release");
  if (owner !== cmd.expectedOwner) {
    return refuse(
      "refused-owner-changed",
      `the owner is now ${owner ?? "unknown"}, not the one you saw: nothing deleted`,
    );
  }
  const resource = escapeBytes(sample.key, 200);
  if (sample.type === "string") {
    if ((sample.string?.length ?? 0) > MAX_RELEASE_VALUE_BYTES) {
      return refuse("refused", `the value is over ${MAX_RELEASE_VALUE_BYTES} bytes; lockscope does not force-free it`);
    }
    return {
      kind: "string",
      steps: [`DEL ${resource} on ${source}, only if its value is still ${owner} (one compare-and-delete Lua call)`],
    };
  }
  if (sample.type === "hash") {
    const field = sample.hash?.fields.find(([f]) => escapeBytes(f) === owner || owner?.startsWith(escapeBytes(f)))?.[0];
    if (!field) return refuse("refused", "the holder is not a field of the hash lockscope can name exactly");
    const name = sample.key.toString("utf8");
    const channel = library === "redisson" ? `redisson_lock__channel:{${name}}` : "";
    const steps = [`DEL ${resource} on ${source}, only if the hash still has holder field ${escapeBytes(field)}`];
    if (channel) steps.push(`PUBLISH ${channel} 0 (wakes Redisson waiters, as Redisson's own unlock does)`);
    return { kind: "hash", field, channel, steps };
  }
  return refuse("refused", `a ${sample.type} lock cannot be released safely by lockscope (release it from its client)`);
}
