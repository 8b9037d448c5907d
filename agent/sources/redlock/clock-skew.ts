/**
 * Clock skew between the nodes of a Redlock group, from each node's `TIME`. Pure: the source measures, this decides.
 *
 * Why it matters: Redis expires a key by its own wall clock, and Redlock budgets only a drift allowance (1% of the
 * TTL + 2 ms) for clocks disagreeing. Nodes whose clocks already differ by a large part of that allowance are not
 * kept in step (no NTP, or a VM paused); the correction that eventually comes steps a clock and moves every expiry
 * on that node by the same amount, which the allowance does not cover.
 */
import type { Hazard } from "../../../lib/contract/lock";

/** Skew at or above this fraction of a lock's drift allowance raises a warning; at the full allowance, critical. */
export const SKEW_WARN_FRACTION = 0.5;

/**
 * Sample TIME reply, as ioredis returns it (unix seconds, microseconds, both as strings):
 *   [ '1732870123', '456789' ]
 * Returns epoch milliseconds (with a fraction), or null for anything else.
 */
export function parseTimeReply(reply: unknown): number | null {
  if (!Array.isArray(reply) || reply.length !== 2) return null;
  const [s, us] = reply.map((x: unknown) => (typeof x === "string" || typeof x === "number" ? String(x) : ""));
  if (!/^\d{1,12}$/.test(s!) || !/^\d{1,6}$/.test(us!)) return null;
  return Number(s) * 1000 + Number(us) / 1000;
}

/** One TIME exchange: the node's answer and the agent's clock just before sending and just after receiving. */
export interface TimeSample {
  serverMs: number;
  sentAtMs: number;
  receivedAtMs: number;
}

/** Node clock minus agent clock, and how far off that estimate can be. */
export interface ClockOffset {
  offsetMs: number;
  uncertaintyMs: number;
}

/**
 * The node read its clock somewhere within the round trip; assuming the middle (NTP's assumption) is off by at most
 * half the round trip. TIME has microsecond resolution, so that bound is the whole error.
 */
export function estimateOffset(s: TimeSample): ClockOffset | null {
  const rtt = s.receivedAtMs - s.sentAtMs;
  if (!Number.isFinite(rtt) || rtt < 0 || !Number.isFinite(s.serverMs)) return null;
  return { offsetMs: s.serverMs - (s.sentAtMs + rtt / 2), uncertaintyMs: rtt / 2 + 0.001 };
}

export interface NodeOffset extends ClockOffset {
  node: string;
}

export interface GroupSkew {
  /** Largest difference between two nodes' clocks, as estimated. */
  skewMs: number;
  /** The difference that is certain whatever the round trips hid (skew less both uncertainties), never below 0. */
  lowerBoundMs: number;
  /** The node whose clock is furthest ahead, and the one furthest behind. */
  ahead: string;
  behind: string;
}

/** Skew across the nodes whose offset is known; null with fewer than two of them. */
export function groupSkew(offsets: readonly NodeOffset[]): GroupSkew | null {
  if (offsets.length < 2) return null;
  let ahead = offsets[0]!;
  let behind = offsets[0]!;
  for (const o of offsets) {
    if (o.offsetMs > ahead.offsetMs) ahead = o;
    if (o.offsetMs < behind.offsetMs) behind = o;
  }
  const skewMs = ahead.offsetMs - behind.offsetMs;
  return {
    skewMs,
    lowerBoundMs: Math.max(0, skewMs - ahead.uncertaintyMs - behind.uncertaintyMs),
    ahead: ahead.node,
    behind: behind.node,
  };
}

/**
 * A hazard when the certain skew reaches half of the lock's drift allowance (warning) or all of it (critical).
 * The message names the nodes and the allowance but not the measured figure, which varies from poll to poll and
 * would make the lock look changed every time; the figure is in the group's health.
 */
export function skewHazard(skew: GroupSkew | null, driftMs: number | null): Hazard | null {
  if (!skew || driftMs === null || driftMs <= 0) return null;
  const ratio = skew.lowerBoundMs / driftMs;
  if (ratio < SKEW_WARN_FRACTION) return null;
  const critical = ratio >= 1;
  return {
    code: "redlock-clock-skew",
    severity: critical ? "critical" : "warning",
    message:
      `Node clocks differ by ${critical ? "more than" : "over half of"} the drift allowance (${driftMs} ms for this lock): ` +
      `${skew.ahead} runs ahead of ${skew.behind}. Redis expires keys by its own clock, so a correction of that size ` +
      `moves this lock's expiry on one node by more than Redlock allows for.`,
  };
}
