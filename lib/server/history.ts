import type { Distribution, ResourceHistory, TopContended } from "../contract/alerts";
import type { LockEvent } from "../contract/lock";
import type { ResourceHourRow } from "./store";

/** Histogram bucket upper bounds (ms): from a fast mutex to a stuck job. */
export const BUCKETS_MS = [100, 500, 1000, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000, Infinity];

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = values.filter((v) => Number.isFinite(v) && v >= 0).sort((a, b) => a - b);
  const histogram = BUCKETS_MS.map((leMs) => ({ leMs, count: 0 }));
  for (const v of sorted) histogram.find((b) => v <= b.leMs)!.count++;
  return {
    count: sorted.length,
    p50: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    max: sorted.length ? sorted[sorted.length - 1]! : null,
    histogram,
  };
}

const ENDS = new Set(["released", "expired", "lost", "owner-changed"]);

/**
 * "Taken over" means a new owner after the previous lease had run out (the slow holder outlived its TTL). An owner
 * change within the lease is a release and the next acquire seen in one read; a semaphore's permits are reported
 * one by one and never change owner.
 */
export function isTakeover(e: Pick<LockEvent, "type" | "detail">): boolean {
  return e.type === "owner-changed" && e.detail?.afterExpiry === true;
}

/**
 * One resource's contention over a window, from its events in time order (pure): acquisitions per bucket, hold
 * times (heldMs recorded when a holding ended), wait times (waitedMs, where the backend records queues), and the
 * timeline of holders.
 */
export function resourceHistory(
  resource: string,
  events: readonly LockEvent[],
  windowMs: number,
  nowMs: number,
  bucketCount = 60,
): ResourceHistory {
  const bucketMs = Math.max(1000, Math.ceil(windowMs / bucketCount));
  const start = nowMs - windowMs;
  const buckets = Array.from({ length: bucketCount }, (_, i) => ({
    t: new Date(start + i * bucketMs).toISOString(),
    acquisitions: 0,
    ownerChanges: 0,
    expiries: 0,
  }));
  const holds: number[] = [];
  const waits: number[] = [];
  const timeline: ResourceHistory["timeline"] = [];
  for (const e of events) {
    const at = Date.parse(e.at);
    const b = buckets[Math.floor((at - start) / bucketMs)];
    if (b) {
      if (e.type === "acquired") b.acquisitions++;
      else if (e.type === "owner-changed") {
        b.acquisitions++;
        if (isTakeover(e)) b.ownerChanges++;
      } else if (e.type === "expired") b.expiries++;
    }
    const held = e.detail?.heldMs;
    if (ENDS.has(e.type) && typeof held === "number") holds.push(held);
    const waited = e.detail?.waitedMs;
    if (typeof waited === "number") waits.push(waited);
    // Permits end one by one: close the ending holder's own entry, else the latest one still open.
    const open = e.detail?.permit
      ? timeline.findLast((t) => t.to === null && t.owner === e.owner)
      : timeline[timeline.length - 1];
    if (ENDS.has(e.type) && open && open.to === null) {
      open.to = e.at;
      open.end = e.type;
    }
    if (e.type === "acquired" || e.type === "owner-changed")
      timeline.push({ owner: e.owner, from: e.at, to: null, end: null });
  }
  return {
    resource,
    windowMs,
    buckets,
    hold: distribution(holds),
    wait: distribution(waits),
    timeline: timeline.slice(-200),
  };
}

/** The most contended resources of a window from the hourly rollups (pure): ranked by acquisitions and takeovers. */
export function topContended(rows: readonly ResourceHourRow[], windowMs: number, limit = 20): TopContended {
  const by = new Map<string, TopContended["resources"][number] & { holdSum: number; holdCount: number }>();
  for (const r of rows) {
    let t = by.get(r.lockId);
    if (!t) {
      t = {
        resource: r.resource,
        backend: r.backend,
        lockId: r.lockId,
        acquisitions: 0,
        ownerChanges: 0,
        expiries: 0,
        holdAvgMs: null,
        holdMaxMs: null,
        holdSum: 0,
        holdCount: 0,
      };
      by.set(r.lockId, t);
    }
    t.acquisitions += r.acquisitions;
    t.ownerChanges += r.ownerChanges;
    t.expiries += r.expiries;
    t.holdSum += r.holdMsSum;
    t.holdCount += r.holdCount;
    if (r.holdCount > 0) t.holdMaxMs = Math.max(t.holdMaxMs ?? 0, r.holdMsMax);
  }
  const resources = [...by.values()]
    .map(({ holdSum, holdCount, ...t }) => ({
      ...t,
      holdAvgMs: holdCount > 0 ? Math.round(holdSum / holdCount) : null,
    }))
    .sort((a, b) => b.acquisitions + b.ownerChanges - (a.acquisitions + a.ownerChanges) || b.expiries - a.expiries)
    .slice(0, limit);
  return { windowMs, resources };
}
