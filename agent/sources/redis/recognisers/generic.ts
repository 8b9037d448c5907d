import { escapeBytes } from "../../../core/escape";
import type { Recogniser } from "./types";

const OWNER_CHARS = 128;

/** The textbook lock: `SET key token NX PX ttl`; the value is the holder's token. */
export const genericString: Recogniser = {
  name: "generic-string-token",
  recognise(sample) {
    if (sample.type !== "string" || !sample.string) return null;
    return {
      library: "generic",
      rule: "generic-string-token",
      owner: escapeBytes(sample.string.prefix, OWNER_CHARS, sample.string.length),
      holder: null,
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
    return { library: "generic", rule: `generic-${sample.type}`, owner: null, holder: null, waiters: [] };
  },
};
