import type { LockHolder } from "../../../../lib/contract/lock";
import { escapeBytes } from "../../../core/escape";
import { owner } from "./shapes";
import type { Recogniser } from "./types";

/*
 * bsm/redislock (Go, redislock.go): the value is a token of 16 random bytes in unpadded base64url (22 characters,
 * the last carrying 2 bits: A, Q, g or w) followed by the caller's optional metadata; SET NX PX ttl.
 *   GET my-key -> "Xk3vQ9pL2mN8rT5wY1zB0g"            or with metadata  "Xk3vQ9pL2mN8rT5wY1zB0g{\"job\":17}"
 * A guess from the shape, made only for keys with a TTL and for tokens that mix upper and lower case (random
 * base64url nearly always does; hex, UUIDs and words do not).
 */

export const RULE_BSM = "base64url-16-byte-token-guess";
export const RULE_BSM_METADATA = "base64url-16-byte-token-with-metadata-guess";

const TOKEN_RE = /^[A-Za-z0-9_-]{21}[AQgw]$/;

export const bsmRedislock: Recogniser = {
  name: "bsm-redislock",
  recognise(sample) {
    const s = sample.string;
    if (sample.type !== "string" || !s || s.prefix.length < 22 || sample.pttl < 0) return null;
    const token = s.prefix.subarray(0, 22).toString("latin1");
    if (!TOKEN_RE.test(token) || !/[A-Z]/.test(token) || !/[a-z]/.test(token)) return null;
    const holder: LockHolder = { token };
    if (s.length > 22) holder.metadata = escapeBytes(s.prefix.subarray(22), 96, s.length - 22);
    return {
      library: "bsm-redislock",
      rule: s.length > 22 ? RULE_BSM_METADATA : RULE_BSM,
      owner: owner(s.prefix, s.length),
      holder,
      waiters: [],
    };
  },
};
