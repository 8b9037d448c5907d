import { ascii, isLowerHex, owner, wholeString } from "./shapes";
import type { Recogniser } from "./types";

/*
 * node-redlock v5 (redlock on npm, dist/esm/index.js `_random`): randomBytes(16).toString("hex"), the same value on
 * every resource of one lock and on every node; always SET ... PX duration, extended by re-setting PX.
 *   GET invoice:42 -> "3f9a0c1d5e7b2a4f6c8d0e1f2a3b4c5d"
 * Any token made from 16 random bytes in hex has this shape, so the label is a guess; a key without a TTL cannot
 * be node-redlock's and is left to the generic rules. redis-py's UUIDv1 tokens are the same length and are
 * recognised first.
 */

export const RULE_NODE_REDLOCK = "hex32-token-guess";

/**
 * Seen by the Redis source, the key is read on one node on its own: node-redlock with a single client, or one
 * node of a Redlock group nobody configured as such. Said in the label, so that nobody looks for it under the
 * Redlock backend (which shows groups configured with REDLOCK_NODES, with their quorum).
 */
export const NODE_REDLOCK_SINGLE = "node-redlock (single node)";

export const nodeRedlock: Recogniser = {
  name: "node-redlock",
  recognise(sample) {
    const whole = wholeString(sample);
    const t = whole ? ascii(whole, 32) : null;
    if (t === null || !isLowerHex(t, 32) || sample.pttl < 0) return null;
    return { library: NODE_REDLOCK_SINGLE, rule: RULE_NODE_REDLOCK, owner: owner(whole!), holder: null, waiters: [] };
  },
};
