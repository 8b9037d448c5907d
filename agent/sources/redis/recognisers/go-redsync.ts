import { ascii, owner, wholeString } from "./shapes";
import type { Recogniser } from "./types";

/*
 * go-redsync (mutex.go genValue): 16 random bytes in standard base64, so 24 characters ending "==" whose last
 * data character carries only 2 bits (A, Q, g or w); SET NX PX expiry (8 s by default).
 *   GET my-global-mutex -> "q8v0K1Yb3cXwP4m2Rr9T7g=="
 * The shape is what any 16-byte base64 token looks like: a guess, and only for keys with a TTL.
 */

export const RULE_GO_REDSYNC = "base64-16-byte-token-guess";

const TOKEN_RE = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

export const goRedsync: Recogniser = {
  name: "go-redsync",
  recognise(sample) {
    const whole = wholeString(sample);
    const t = whole ? ascii(whole, 24) : null;
    if (t === null || !TOKEN_RE.test(t) || sample.pttl < 0) return null;
    return { library: "go-redsync", rule: RULE_GO_REDSYNC, owner: owner(whole!), holder: null, waiters: [] };
  },
};
