import type { Distribution, RankBy, ResourceHistory, TopContended } from "../contract/alerts";
import type { Lock, LockEvent } from "../contract/lock";
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
  // Pairing acquires with ends needs time order; a stable sort keeps a release before the acquire of the same ms.
  const ordered = events.every((e, i) => i === 0 || Date.parse(e.at) >= Date.parse(events[i - 1]!.at))
    ? events
    : [...events].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  for (const e of ordered) {
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
      if (e.type === "owner-changed") open.takenOver = isTakeover(e);
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
    timelineTotal: timeline.length,
  };
}

/** What hurts per lock in a window, from its raw events (pure): waiting, and holding without a TTL. */
export interface LockHurt {
  lockId: string;
  resource: string;
  backend: string;
  waitMsTotal: number;
  waitMsMax: number | null;
  waited: number;
  noTtlMs: number;
}

/**
 * Per lock: how long contenders waited (waitedMs, recorded where a queue is visible) and how long it was held with
 * no TTL at all (from an acquire without TTL to the holding's end, or to now while it lasts). Events in time order.
 */
export function hurtByLock(
  events: readonly LockEvent[],
  windowStartMs: number,
  nowMs: number,
  /** Locks held now: one without TTL whose acquire came before the window counts from the window's start. */
  live: Iterable<Pick<Lock, "id" | "resource" | "backend" | "ttlMs" | "since" | "holders">> = [],
): Map<string, LockHurt> {
  const out = new Map<string, LockHurt>();
  // The start of the current TTL-less holding per lock (per permit owner for semaphores).
  const noTtlFrom = new Map<string, number>();
  const of = (e: LockEvent) => {
    let h = out.get(e.lockId);
    if (!h) {
      h = {
        lockId: e.lockId,
        resource: e.resource,
        backend: e.backend,
        waitMsTotal: 0,
        waitMsMax: null,
        waited: 0,
        noTtlMs: 0,
      };
      out.set(e.lockId, h);
    }
    return h;
  };
  for (const e of events) {
    const at = Date.parse(e.at);
    const h = of(e);
    const waited = e.detail?.waitedMs;
    if (typeof waited === "number" && Number.isFinite(waited) && waited >= 0) {
      h.waited++;
      h.waitMsTotal += waited;
      h.waitMsMax = Math.max(h.waitMsMax ?? 0, waited);
    }
    const holdKey = e.detail?.permit ? `${e.lockId}\u0000${e.owner ?? ""}` : e.lockId;
    const open = noTtlFrom.get(holdKey);
    if (ENDS.has(e.type) && open !== undefined) {
      h.noTtlMs += Math.max(0, at - open);
      noTtlFrom.delete(holdKey);
    }
    if ((e.type === "acquired" || e.type === "owner-changed") && e.ttlMs === null)
      noTtlFrom.set(holdKey, Math.max(windowStartMs, at));
  }
  for (const l of live) {
    // A semaphore's permits carry their own leases; only a plain holding without TTL counts here.
    if (l.ttlMs !== null || l.holders || noTtlFrom.has(l.id)) continue;
    if (!out.has(l.id))
      out.set(l.id, {
        lockId: l.id,
        resource: l.resource,
        backend: l.backend,
        waitMsTotal: 0,
        waitMsMax: null,
        waited: 0,
        noTtlMs: 0,
      });
    noTtlFrom.set(l.id, Math.max(windowStartMs, Date.parse(l.since)));
  }
  for (const [key, from] of noTtlFrom) {
    const h = out.get(key.split("\u0000")[0]!);
    if (h) h.noTtlMs += Math.max(0, nowMs - from);
  }
  return out;
}

const RANK: Record<RankBy, (r: TopContended["resources"][number]) => number> = {
  contention: (r) => r.acquisitions + r.ownerChanges,
  wait: (r) => r.waitMsTotal ?? 0,
  waiters: (r) => r.waited ?? 0,
  takeovers: (r) => r.ownerChanges,
  "no-ttl": (r) => r.noTtlMs ?? 0,
};

/** The fleet's acquisitions, takeovers and expiries per hour from the rollups (pure), every hour of the window. */
export function fleetHours(
  rows: readonly ResourceHourRow[],
  sinceMs: number,
  nowMs: number,
): NonNullable<TopContended["hours"]> {
  const HOUR = 3_600_000;
  const first = Math.floor(sinceMs / HOUR) * HOUR;
  const hours = new Map<number, { t: string; acquisitions: number; ownerChanges: number; expiries: number }>();
  for (let t = first; t <= nowMs; t += HOUR)
    hours.set(t, { t: new Date(t).toISOString(), acquisitions: 0, ownerChanges: 0, expiries: 0 });
  for (const r of rows) {
    const h = hours.get(Math.floor(r.hour.getTime() / HOUR) * HOUR);
    if (!h) continue;
    h.acquisitions += r.acquisitions;
    h.ownerChanges += r.ownerChanges;
    h.expiries += r.expiries;
  }
  return [...hours.values()];
}

/** The most contended resources of a window from the hourly rollups (pure): ranked by acquisitions and takeovers. */
export function topContended(
  rows: readonly ResourceHourRow[],
  windowMs: number,
  limit = 20,
  hurts?: ReadonlyMap<string, LockHurt>,
  rankBy: RankBy = "contention",
): TopContended {
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
  // A lock that only waited or sat without TTL may have no rollup row in the window: it still ranks.
  for (const h of hurts?.values() ?? []) {
    if (by.has(h.lockId)) continue;
    by.set(h.lockId, {
      resource: h.resource,
      backend: h.backend,
      lockId: h.lockId,
      acquisitions: 0,
      ownerChanges: 0,
      expiries: 0,
      holdAvgMs: null,
      holdMaxMs: null,
      holdSum: 0,
      holdCount: 0,
    });
  }
  const score = RANK[rankBy];
  const resources = [...by.values()]
    .map(({ holdSum, holdCount, ...t }) => {
      const h = hurts?.get(t.lockId);
      return {
        ...t,
        holdAvgMs: holdCount > 0 ? Math.round(holdSum / holdCount) : null,
        ...(hurts
          ? {
              waitMsTotal: h?.waitMsTotal ?? 0,
              waitMsMax: h?.waitMsMax ?? null,
              waited: h?.waited ?? 0,
              noTtlMs: h?.noTtlMs ?? 0,
            }
          : {}),
      };
    })
    .filter((r) => rankBy === "contention" || score(r) > 0)
    .sort(
      (a, b) =>
        score(b) - score(a) ||
        b.acquisitions + b.ownerChanges - (a.acquisitions + a.ownerChanges) ||
        b.expiries - a.expiries,
    )
    .slice(0, limit);
  return { windowMs, by: rankBy, resources };
}
