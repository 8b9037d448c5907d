import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import { cutPrefix, escapeBytes } from "../../core/escape";
import { fingerprintFromHex, fingerprintOf } from "../../release/fingerprint";
import type { KeySample } from "./redis-port";

/**
 * Strings longer than this are not hashed or force-freed: a token is short, a blob is not a lock to force-free, and
 * the bound keeps one Lua call's server time small (SHA-1 of 64 KB takes well under a millisecond).
 */
export const MAX_RELEASE_VALUE_BYTES = 64 * 1024;

/** The only writes lockscope makes, each a single atomic Lua call (lua/*.lua). */
export interface RedisReleasePort {
  /** compare-and-delete-1.lua: 1 deleted; 0 gone or another value; -1 value longer than maxBytes. */
  compareAndDelete(key: Buffer, sha1Hex: string, maxBytes: number): Promise<number>;
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
 * The hash field that holds the lock: the one the recognisers named as owner (exactly, or as the start of an owner
 * text that adds a count). With a fingerprint, only the field whose bytes have exactly that digest.
 */
export function holderField(sample: KeySample, owner: string | null, fingerprint?: string): Buffer | null {
  const fields = sample.hash?.fields ?? [];
  if (fingerprint !== undefined) return fields.find(([f]) => fingerprintOf(f) === fingerprint)?.[0] ?? null;
  if (owner === null) return null;
  const exact = fields.find(([f]) => escapeBytes(f) === owner);
  const counted = fields.find(([f]) => owner.startsWith(escapeBytes(f)));
  // An owner cut for display ("…(+N bytes)") names the start of a long field.
  const cut = cutPrefix(owner);
  const long = cut ? fields.find(([f]) => escapeBytes(f, 1 << 20).startsWith(cut)) : undefined;
  return (exact ?? counted ?? long)?.[0] ?? null;
}

/**
 * Lock.ownerFingerprint of a sampled key: SHA-1 of a string's whole value (computed here when the read prefix is the
 * whole value, else by the server: `serverSha1`), or of the holder field of a hash. Null for other types (they are
 * never force-released) and when the whole value could not be hashed.
 */
export function sampleFingerprint(sample: KeySample, owner: string | null, serverSha1?: string | null): string | null {
  if (sample.type === "string" && sample.string) {
    const { prefix, length } = sample.string;
    if (prefix.length >= length) return fingerprintOf(prefix);
    return serverSha1 ? fingerprintFromHex(serverSha1) : null;
  }
  if (sample.type === "hash") {
    const field = holderField(sample, owner);
    return field ? fingerprintOf(field) : null;
  }
  return null;
}

/** String values whose fingerprint needs the server (longer than what was read, short enough to hash). */
export function needsServerFingerprint(sample: KeySample): boolean {
  const s = sample.string;
  return sample.type === "string" && !!s && s.prefix.length < s.length && s.length <= MAX_RELEASE_VALUE_BYTES;
}

/**
 * Decides, from a fresh read of the key, what a force-release may delete. Pure: the source does the reads and
 * writes. `owner` is the owner the recognisers make of the fresh sample (escaped, as shown to the operator); the
 * exact holding (the fingerprint) is checked by the release runner and again, atomically, by the Lua script.
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
      steps: [
        `DEL ${resource} on ${source}, only if its whole value is still the one you saw (${owner}; compared by SHA-1 in one Lua call)`,
      ],
    };
  }
  if (sample.type === "hash") {
    const field = holderField(sample, owner, cmd.expectedFingerprint);
    if (!field) return refuse("refused", "the holder is not a field of the hash lockscope can name exactly");
    const name = sample.key.toString("utf8");
    const channel = library === "redisson" ? `redisson_lock__channel:{${name}}` : "";
    const steps = [`DEL ${resource} on ${source}, only if the hash still has holder field ${escapeBytes(field)}`];
    if (channel) steps.push(`PUBLISH ${channel} 0 (wakes Redisson waiters, as Redisson's own unlock does)`);
    return { kind: "hash", field, channel, steps };
  }
  return refuse("refused", `a ${sample.type} lock cannot be released safely by lockscope (release it from its client)`);
}
