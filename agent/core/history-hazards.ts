import type { Hazard } from "../../lib/contract/lock";

/** What the tracker remembers about the current holding of one lock, to judge it over time. */
export interface HoldingHistory {
  /** When the current owner was first seen (ms). */
  sinceMs: number;
  /** Times renewals were seen (ms), newest last, at most RENEWALS_KEPT. */
  renewals: number[];
  /** Largest TTL seen during this holding: the lease the holder asks for. */
  maxTtlMs: number | null;
  /** Set when this holding began by taking over a lock whose previous lease had run out. */
  tookOverExpired?: { previousOwner: string | null; atMs: number };
  /** Set when this owner's token came back after the lock had been released. */
  reappearedAfterRelease?: { atMs: number };
}

export const RENEWALS_KEPT = 8;

export interface HistoryHazardOptions {
  /** Longest an operator expects any lock to be held; 0 disables the check. */
  maxHoldMs: number;
  /** How long a takeover or zombie hazard stays on the lock after it happened. */
  rememberMs: number;
}

export const DEFAULT_HISTORY_OPTIONS: HistoryHazardOptions = { maxHoldMs: 15 * 60_000, rememberMs: 5 * 60_000 };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function minutes(ms: number): string {
  return ms >= 120_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;
}

/**
 * Hazards that only a series of observations shows (pure):
 * - renewals-stopped: it was renewed regularly (a watchdog) and the renewals stopped: the holder is likely dead
 *   and the lock will expire, or it is hung;
 * - zombie-renewal: still being renewed long past the configured hold limit (a watchdog keeping a dead job's lock
 *   alive), or the owner's token came back after its release;
 * - held-too-long: held past the configured limit; held-past-lease: held far longer than the lease it asked for;
 * - expired-while-held: this holder took over a lock whose previous lease ran out while that holder was working.
 */
export function historyHazards(
  h: HoldingHistory,
  ttlMs: number | null,
  nowMs: number,
  opts: HistoryHazardOptions,
): Hazard[] {
  const out: Hazard[] = [];
  const heldMs = nowMs - h.sinceMs;
  const renewing = h.renewals.length >= 2;
  if (renewing) {
    const gaps = h.renewals.slice(1).map((t, i) => t - h.renewals[i]!);
    const period = median(gaps);
    const silent = nowMs - h.renewals[h.renewals.length - 1]!;
    // Two missed renewals; the floor keeps one late poll from counting as silence.
    if (period > 0 && silent > 2 * period + 200 && ttlMs !== null) {
      out.push({
        code: "renewals-stopped",
        severity: "warning",
        message: `Renewed every ~${minutes(period)} until ${minutes(silent)} ago, then no more: the holder is likely dead or hung; the lock expires in ${minutes(ttlMs)}.`,
      });
    }
  }
  const lastRenewal = h.renewals[h.renewals.length - 1];
  const recentlyRenewed = lastRenewal !== undefined && nowMs - lastRenewal < 60_000;
  if (opts.maxHoldMs > 0 && heldMs > opts.maxHoldMs) {
    if (renewing && recentlyRenewed) {
      out.push({
        code: "zombie-renewal",
        severity: "critical",
        message: `Held ${minutes(heldMs)} (limit ${minutes(opts.maxHoldMs)}) and still renewed: a watchdog may be keeping a dead or stuck job's lock alive.`,
      });
    } else {
      out.push({
        code: "held-too-long",
        severity: "warning",
        message: `Held ${minutes(heldMs)}, past the configured limit of ${minutes(opts.maxHoldMs)}.`,
      });
    }
  } else if (h.maxTtlMs !== null && h.maxTtlMs > 0 && heldMs > 10 * h.maxTtlMs && heldMs > 60_000) {
    out.push({
      code: "held-past-lease",
      severity: "info",
      message: `Held ${minutes(heldMs)}, more than ten times its ${minutes(h.maxTtlMs)} lease: it keeps being extended.`,
    });
  }
  if (h.reappearedAfterRelease && nowMs - h.reappearedAfterRelease.atMs < opts.rememberMs) {
    out.push({
      code: "zombie-renewal",
      severity: "critical",
      message:
        "This owner's token came back after the lock was released: a renewal or retry re-created a lock its holder had given up.",
    });
  }
  if (h.tookOverExpired && nowMs - h.tookOverExpired.atMs < opts.rememberMs) {
    out.push({
      code: "expired-while-held",
      severity: "critical",
      message: `Took over from ${h.tookOverExpired.previousOwner ?? "an unknown holder"} whose lease had run out: if that holder was still working, two clients believed they held the lock.`,
    });
  }
  // One hazard per code: the first (most specific) wins.
  return out.filter((x, i) => out.findIndex((y) => y.code === x.code) === i);
}

/**
 * The earliest time after `nowMs` at which time alone may change which hazards `historyHazards` finds for `h` (a
 * hold crossing a limit, renewals falling silent or no longer recent, a remembered takeover or token forgotten);
 * Infinity when nothing can. Until then the hazards' codes stay what they are at `nowMs`, so a tracker that re-reads
 * only changed locks revises a quiet lock at that moment instead of at every poll (pure).
 */
export function nextHazardChangeMs(h: HoldingHistory, nowMs: number, opts: HistoryHazardOptions): number {
  let next = Infinity;
  // Each condition above is a strict comparison with a boundary: the first whole millisecond on its other side.
  const at = (ms: number) => {
    if (ms > nowMs && ms < next) next = ms;
  };
  const last = h.renewals[h.renewals.length - 1];
  if (last !== undefined) {
    if (h.renewals.length >= 2) {
      const period = median(h.renewals.slice(1).map((t, i) => t - h.renewals[i]!));
      if (period > 0) at(last + 2 * period + 200 + 1);
    }
    at(last + 60_000);
  }
  if (opts.maxHoldMs > 0) at(h.sinceMs + opts.maxHoldMs + 1);
  if (h.maxTtlMs !== null && h.maxTtlMs > 0) at(h.sinceMs + Math.max(10 * h.maxTtlMs, 60_000) + 1);
  if (h.reappearedAfterRelease) at(h.reappearedAfterRelease.atMs + opts.rememberMs);
  if (h.tookOverExpired) at(h.tookOverExpired.atMs + opts.rememberMs);
  return next;
}
