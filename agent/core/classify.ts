import type { LockEventType } from "../../lib/contract/lock";

/** What the agent knew about a lock at its previous observation. */
export interface PreviousObservation {
  owner: string | null;
  /** Remaining lease at that observation; null = never expires. */
  ttlMs: number | null;
  observedAtMs: number;
}

/** What it sees now; null when the key is confirmed gone (PTTL -2, node deleted). */
export interface CurrentObservation {
  owner: string | null;
  ttlMs: number | null;
  observedAtMs: number;
}

export interface Classification {
  type: LockEventType;
  /** For owner changes: the previous holder's lease had run out before the new one was seen. */
  afterExpiry?: boolean;
}

/**
 * How much the observed TTL may differ from the one predicted from the previous observation before it counts as a
 * change. Round trips and Redis's own expiry granularity make exact equality meaningless.
 */
export const DEFAULT_TOLERANCE_MS = 150;

/** Remaining lease predicted for `atMs` from an earlier observation (never below zero). */
export function predictedTtl(prev: PreviousObservation, atMs: number): number | null {
  if (prev.ttlMs === null) return null;
  return Math.max(0, prev.ttlMs - (atMs - prev.observedAtMs));
}

/**
 * Classifies the change between two observations of the same lock, or null when nothing worth an event happened.
 *
 * - gone and its lease had (almost) run out: expired; gone earlier than that, or never expiring: released;
 * - another owner: owner-changed, with afterExpiry when the old lease had run out (the lock expired and was
 *   re-acquired between two polls, the "slow holder outlived its TTL" case);
 * - same owner and more lease left than predicted (or an expiry added or removed): renewed.
 */
export function classifyChange(
  prev: PreviousObservation,
  next: CurrentObservation | null,
  goneAtMs: number,
  toleranceMs = DEFAULT_TOLERANCE_MS,
): Classification | null {
  if (next === null) {
    const left = predictedTtl(prev, goneAtMs);
    if (left !== null && left <= toleranceMs) return { type: "expired" };
    return { type: "released" };
  }
  const left = predictedTtl(prev, next.observedAtMs);
  if (next.owner !== prev.owner) {
    return { type: "owner-changed", afterExpiry: left !== null && left <= toleranceMs };
  }
  if ((left === null) !== (next.ttlMs === null)) return { type: "renewed" };
  if (left !== null && next.ttlMs !== null && next.ttlMs > left + toleranceMs) return { type: "renewed" };
  return null;
}
