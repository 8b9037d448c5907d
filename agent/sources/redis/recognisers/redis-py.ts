import type { Hazard } from "../../../../lib/contract/lock";
import { ascii, hazard, isLowerHex, owner, wholeString } from "./shapes";
import type { Recogniser } from "./types";

/*
 * redis-py's Lock (redis/lock.py): the token is `uuid.uuid1().hex` made when acquire() runs, so it carries the
 * acquiring host's clock and node id; `timeout=None` (the default) means the key gets no expiry at all.
 *   GET resource -> "5b5a4f1e07a611efa3e1525400123456"        (version nibble "1" at index 12)
 * UUIDv1 layout in hex: time_low[0..8] time_mid[8..12] version+time_hi[12..16] variant+clock_seq[16..20] node[20..32]
 */

export const RULE_REDIS_PY = "redis-py-uuid1-token";

/** 100 ns intervals between the Gregorian epoch (1582-10-15) and the Unix epoch. */
const GREGORIAN_OFFSET = 0x01b21dd213814000n;
/** A random 32-hex token passes the version and variant checks 1 time in 64; a time in this window makes it rare. */
const PLAUSIBLE_FROM_MS = Date.UTC(2005, 0, 1);
const PLAUSIBLE_AHEAD_MS = 24 * 3600 * 1000;

export interface Uuid1 {
  unixMs: number;
  clockSeq: number;
  node: string;
  /** The multicast bit is set when Python could not read a MAC address and drew a random node. */
  randomNode: boolean;
}

export function decodeUuid1Hex(hex: string): Uuid1 | null {
  if (!isLowerHex(hex, 32) || hex[12] !== "1" || !"89ab".includes(hex[16]!)) return null;
  const ticks =
    (BigInt(`0x${hex.slice(13, 16)}`) << 48n) |
    (BigInt(`0x${hex.slice(8, 12)}`) << 32n) |
    BigInt(`0x${hex.slice(0, 8)}`);
  const unixMs = Number((ticks - GREGORIAN_OFFSET) / 10_000n);
  const clockSeq = parseInt(hex.slice(16, 20), 16) & 0x3fff;
  const nodeHex = hex.slice(20);
  return {
    unixMs,
    clockSeq,
    node: nodeHex.match(/../g)!.join(":"),
    randomNode: (parseInt(nodeHex.slice(0, 2), 16) & 1) === 1,
  };
}

export const redisPyLock: Recogniser = {
  name: "redis-py-lock",
  recognise(sample, _keyText, nowMs) {
    const whole = wholeString(sample);
    const t = whole ? ascii(whole, 32) : null;
    const u = t === null ? null : decodeUuid1Hex(t);
    if (!u || u.unixMs < PLAUSIBLE_FROM_MS || u.unixMs > nowMs + PLAUSIBLE_AHEAD_MS) return null;
    const hazards: Hazard[] = [];
    if (sample.pttl === -1) {
      hazards.push(
        hazard(
          "redis-py-no-timeout",
          "warning",
          "redis-py Lock made with timeout=None, the library's default: it never expires, so a holder that dies " +
            "keeps it until someone deletes the key.",
        ),
      );
    }
    return {
      library: "redis-py",
      rule: RULE_REDIS_PY,
      owner: owner(whole!),
      holder: {
        acquiredAt: new Date(u.unixMs).toISOString(),
        clockSeq: u.clockSeq,
        node: u.node,
        randomNode: u.randomNode,
      },
      waiters: [],
      hazards,
    };
  },
};
