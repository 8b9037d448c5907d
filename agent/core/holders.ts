import type { LockHolding } from "../../lib/contract/lock";
import { DEFAULT_TOLERANCE_MS } from "./classify";
import { copyWith } from "./copy-with";

/** A holding as the tracker keeps it: `since` is always known once the holder was seen. */
export type TrackedHolding = LockHolding & { since: string };

export interface HoldingEnd {
  holding: TrackedHolding;
  /** expired: its own lease had (almost) run out when it went; released: it went before that. */
  type: "released" | "expired";
}

export interface HoldersDiff {
  /** The current holders with `since` carried over from the previous observation. */
  holders: TrackedHolding[];
  acquired: TrackedHolding[];
  /** Holders seen before whose own lease grew (a refresh of that permit). */
  renewed: TrackedHolding[];
  ended: HoldingEnd[];
}

/** A holding's lease predicted for atMs from the observation at observedAtMs; null: no lease known. */
function leftAt(h: LockHolding, observedAtMs: number, atMs: number): number | null {
  if (h.ttlMs === undefined || h.ttlMs === null) return null;
  return Math.max(0, h.ttlMs - (atMs - observedAtMs));
}

/** Whether a holding that is gone at atMs had outlived its lease (it stopped refreshing) or was given back. */
export function endOf(
  h: TrackedHolding,
  observedAtMs: number,
  atMs: number,
  toleranceMs = DEFAULT_TOLERANCE_MS,
): HoldingEnd {
  const left = leftAt(h, observedAtMs, atMs);
  return { holding: h, type: left !== null && left <= toleranceMs ? "expired" : "released" };
}

/**
 * Diffs the holders of a lock that has several by design (semaphore permits). Pure. A permit that appears is an
 * acquisition, one that goes is a release (or an expiry when its own lease had run out): another client's permit
 * is never a takeover of this one, so nothing here is an owner change.
 */
export function diffHolders(
  prev: readonly TrackedHolding[] | null,
  prevObservedAtMs: number,
  next: readonly LockHolding[],
  observedAtMs: number,
  toleranceMs = DEFAULT_TOLERANCE_MS,
): HoldersDiff {
  const before = new Map((prev ?? []).map((h) => [h.owner, h]));
  const seen = new Set<string>();
  const at = new Date(observedAtMs).toISOString();
  const holders: TrackedHolding[] = [];
  const acquired: TrackedHolding[] = [];
  const renewed: TrackedHolding[] = [];
  for (const h of next) {
    if (seen.has(h.owner)) continue;
    seen.add(h.owner);
    const old = before.get(h.owner);
    const tracked: TrackedHolding = copyWith(h, { since: old?.since ?? at });
    holders.push(tracked);
    if (!old) acquired.push(tracked);
    else {
      const left = leftAt(old, prevObservedAtMs, observedAtMs);
      const now = h.ttlMs ?? null;
      if (left !== null && now !== null && now > left + toleranceMs) renewed.push(tracked);
    }
  }
  const ended = (prev ?? [])
    .filter((h) => !seen.has(h.owner))
    .map((h) => endOf(h, prevObservedAtMs, observedAtMs, toleranceMs));
  return { holders, acquired, renewed, ended };
}
