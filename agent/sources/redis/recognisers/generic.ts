import type { LockHolder } from "../../../../lib/contract/lock";
import { escapeBytes } from "../../../core/escape";
import type { KeySample } from "../redis-port";
import { ascii, decimalInteger, isLowerHex, OWNER_CHARS, uuidVersion, wholeString } from "./shapes";
import type { Recogniser } from "./types";

export const RULE_INTEGER_TOKEN = "integer-token";

/** Names the shape of a token no library claimed, so the operator sees what kind of value it is. */
function tokenShape(sample: KeySample): { rule: string; holder: LockHolder | null } {
  const whole = wholeString(sample);
  const t = whole ? ascii(whole, 64) : null;
  if (t !== null) {
    const n = decimalInteger(t);
    // A thread or user id, `SETNX key 1`, or a Redisson RSemaphore's free permits (see withSubscriberHint).
    if (n !== null) return { rule: RULE_INTEGER_TOKEN, holder: { value: n } };
    const v = uuidVersion(t);
    if (v === 4) return { rule: "uuid4-token", holder: null };
    if (v !== null) return { rule: "uuid-token", holder: { uuidVersion: v } };
    if (isLowerHex(t, 32)) return { rule: "hex32-token", holder: null };
  }
  return { rule: "generic-string-token", holder: null };
}

/** The textbook lock: `SET key token NX PX ttl`; the value is the holder's token. */
export const genericString: Recogniser = {
  name: "generic-string-token",
  recognise(sample) {
    if (sample.type !== "string" || !sample.string) return null;
    const shape = tokenShape(sample);
    return {
      library: "generic",
      rule: shape.rule,
      owner: escapeBytes(sample.string.prefix, OWNER_CHARS, sample.string.length),
      holder: shape.holder,
      waiters: [],
    };
  },
};

/** A hash whose fields name holders (re-entrant locks): the first field is taken as the owner. */
export const genericHash: Recogniser = {
  name: "generic-hash-field",
  recognise(sample) {
    if (sample.type !== "hash" || !sample.hash) return null;
    const first = sample.hash.fields[0];
    return {
      library: "generic",
      rule: "generic-hash-field",
      owner: first ? escapeBytes(first[0], OWNER_CHARS) : null,
      holder: sample.hash.length > 1 ? { fields: sample.hash.length } : null,
      waiters: [],
    };
  },
};

/** A sorted set of holders (semaphores): members are holders, lowest score first. */
export const genericZset: Recogniser = {
  name: "generic-zset-members",
  recognise(sample) {
    if (sample.type !== "zset" || !sample.zset) return null;
    const first = sample.zset.members[0];
    return {
      library: "generic",
      rule: "generic-zset-members",
      owner: first ? escapeBytes(first[0], OWNER_CHARS) : null,
      holder: { members: sample.zset.length },
      waiters: [],
    };
  },
};

/** Anything else that matched a lock pattern: shown, never an error. */
export const genericAny: Recogniser = {
  name: "generic-unknown-shape",
  recognise(sample) {
    // TYPE can name a module type ("ReJSON-RL", "MBbloom--"): keep the rule short and printable whatever it says.
    const type = String(sample?.type ?? "unknown")
      .slice(0, 32)
      .replace(/[^A-Za-z0-9_-]/g, "?");
    return { library: "generic", rule: `generic-${type}`, owner: null, holder: null, waiters: [] };
  },
};
