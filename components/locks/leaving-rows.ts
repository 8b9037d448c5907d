/**
 * Released rows fade out instead of jumping: a row that left the table's window because its lock was released
 * (or expired, or was lost) is kept where it was, marked "released", for FADE_MS. Purely in the browser and
 * bounded: only rows the window showed, at most MAX_LEAVING at a time, so 100,000 releases cost the same as 50.
 * Pure.
 */
import type { LockEvent } from "../../lib/contract/lock";
import type { LiveLock } from "../live/view-model";

export const FADE_MS = 3000;
export const MAX_LEAVING = 50;

export interface LeavingRow {
  live: LiveLock;
  /** Its position in the whole view when it was last shown. */
  index: number;
  /** Browser time the row left the window. */
  leftAt: number;
}

const GONE: ReadonlySet<LockEvent["type"]> = new Set(["released", "expired", "lost"]);

/**
 * The lock ids whose latest pushed event says the lock is gone (newest first, as the provider keeps them): a lock
 * released and taken again is held, not released.
 */
export function goneLockIds(recentEvents: readonly LockEvent[]): Set<string> {
  const seen = new Set<string>();
  const gone = new Set<string>();
  for (const e of recentEvents) {
    if (seen.has(e.lockId)) continue;
    seen.add(e.lockId);
    if (GONE.has(e.type)) gone.add(e.lockId);
  }
  return gone;
}

/**
 * The leaving rows after the window changed from `prev` to `next` (same query and window start): the rows that
 * left and are gone join, rows back in the window or older than FADE_MS drop out.
 */
export function updateLeaving(
  leaving: readonly LeavingRow[],
  prev: { rows: readonly LiveLock[]; offset: number },
  next: readonly LiveLock[],
  isGone: (lockId: string) => boolean,
  now: number,
): LeavingRow[] {
  const nextIds = new Set(next.map((r) => r.lock.id));
  const out = leaving.filter((l) => !nextIds.has(l.live.lock.id) && now - l.leftAt < FADE_MS);
  const already = new Set(out.map((l) => l.live.lock.id));
  prev.rows.forEach((live, i) => {
    const id = live.lock.id;
    if (nextIds.has(id) || already.has(id) || !isGone(id)) return;
    out.push({ live, index: prev.offset + i, leftAt: now });
  });
  // The newest MAX_LEAVING, then in view order for merging.
  out.sort((a, b) => b.leftAt - a.leftAt);
  out.length = Math.min(out.length, MAX_LEAVING);
  return out.sort((a, b) => a.index - b.index);
}

export function pruneLeaving(leaving: readonly LeavingRow[], now: number): LeavingRow[] {
  return leaving.filter((l) => now - l.leftAt < FADE_MS);
}

export interface DisplayRow {
  live: LiveLock;
  /** Set for a released row still fading out. */
  leaving: LeavingRow | null;
}

/**
 * The window's rows with the leaving rows put back where they were (in view order, so each lands at its old index
 * while the rows that followed it have moved up by one).
 */
export function mergeLeaving(rows: readonly LiveLock[], offset: number, leaving: readonly LeavingRow[]): DisplayRow[] {
  const out: DisplayRow[] = rows.map((live) => ({ live, leaving: null }));
  if (leaving.length === 0) return out;
  const ids = new Set(rows.map((r) => r.lock.id));
  for (const l of leaving) {
    if (ids.has(l.live.lock.id)) continue;
    const pos = l.index - offset;
    if (pos < 0 || pos > out.length) continue;
    out.splice(pos, 0, { live: l.live, leaving: l });
  }
  return out;
}
