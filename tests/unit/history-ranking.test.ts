import { describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { fleetHours, hurtByLock, topContended } from "../../lib/server/history";
import type { ResourceHourRow } from "../../lib/server/store";

const T = Date.parse("2026-12-01T08:00:00Z");
const HOUR = 3_600_000;
let n = 0;
function ev(lockId: string, type: LockEvent["type"], atMs: number, over: Partial<LockEvent> = {}): LockEvent {
  return {
    id: `ev-${++n}`,
    agentId: "a1",
    type,
    lockId,
    backend: "redis",
    source: "redis://127.0.0.1:1/0",
    resource: `res-${lockId}`,
    owner: "o",
    at: new Date(atMs).toISOString(),
    ...over,
  };
}
const row = (lockId: string, hourMs: number, c: Partial<ResourceHourRow>): ResourceHourRow => ({
  lockId,
  resource: `res-${lockId}`,
  backend: "redis",
  hour: new Date(hourMs),
  acquisitions: 0,
  releases: 0,
  expiries: 0,
  ownerChanges: 0,
  holdCount: 0,
  holdMsSum: 0,
  holdMsMax: 0,
  ...c,
});

describe("what hurts, per lock, from raw events", () => {
  it("sums waiting and counts holding without TTL, also while it still lasts", () => {
    const events = [
      ev("Q", "acquired", T, { ttlMs: 30_000, detail: { waitedMs: 4000 } }),
      ev("Q", "released", T + 1000, { ttlMs: null, detail: { heldMs: 1000 } }),
      ev("Q", "acquired", T + 2000, { ttlMs: 30_000, detail: { waitedMs: 9000 } }),
      ev("N", "acquired", T, { ttlMs: null }),
      ev("N", "released", T + 60_000, { ttlMs: null, detail: { heldMs: 60_000 } }),
      ev("N", "acquired", T + 100_000, { ttlMs: null }),
    ];
    const h = hurtByLock(events, T - HOUR, T + 160_000);
    expect(h.get("Q")).toMatchObject({ waitMsTotal: 13_000, waitMsMax: 9000, waited: 2, noTtlMs: 0 });
    expect(h.get("N")).toMatchObject({ waited: 0, noTtlMs: 60_000 + 60_000 });
  });

  it("a live lock without TTL acquired before the window counts from the window's start; TTL'd ones do not", () => {
    const live = [
      {
        id: "OLD",
        resource: "old",
        backend: "redis" as const,
        ttlMs: null,
        since: new Date(T - 5 * HOUR).toISOString(),
      },
      { id: "TTL", resource: "ttl", backend: "redis" as const, ttlMs: 5000, since: new Date(T).toISOString() },
    ];
    const h = hurtByLock([], T - HOUR, T, live);
    expect(h.get("OLD")).toMatchObject({ resource: "old", noTtlMs: HOUR });
    expect(h.has("TTL")).toBe(false);
  });
});

describe("ranking by what hurts", () => {
  const rows = [row("BUSY", T, { acquisitions: 100 }), row("TAKEN", T, { acquisitions: 5, ownerChanges: 4 })];
  const hurts = hurtByLock(
    [
      ev("SLOW", "acquired", T, { ttlMs: 1000, detail: { waitedMs: 60_000 } }),
      ev("STUCK", "acquired", T, { ttlMs: null }),
    ],
    T - HOUR,
    T + 600_000,
  );
  const order = (by: Parameters<typeof topContended>[4]) =>
    topContended(rows, HOUR, 20, hurts, by).resources.map((r) => r.lockId);

  it("each choice puts its own worst first, and lists only locks that have it", () => {
    expect(order("contention")[0]).toBe("BUSY");
    expect(order("takeovers")).toEqual(["TAKEN"]);
    expect(order("wait")).toEqual(["SLOW"]);
    expect(order("waiters")).toEqual(["SLOW"]);
    expect(order("no-ttl")).toEqual(["STUCK"]);
    expect(topContended(rows, HOUR, 20, hurts, "no-ttl")).toMatchObject({
      by: "no-ttl",
      resources: [{ lockId: "STUCK", noTtlMs: 600_000 }],
    });
  });
});

describe("the fleet per hour", () => {
  it("every hour of the window, rollups of all locks summed", () => {
    const hours = fleetHours(
      [
        row("A", T, { acquisitions: 3, ownerChanges: 1 }),
        row("B", T, { acquisitions: 2, expiries: 1 }),
        row("A", T + 2 * HOUR, { acquisitions: 7 }),
      ],
      T,
      T + 2 * HOUR + 5,
    );
    expect(hours).toEqual([
      { t: new Date(T).toISOString(), acquisitions: 5, ownerChanges: 1, expiries: 1 },
      { t: new Date(T + HOUR).toISOString(), acquisitions: 0, ownerChanges: 0, expiries: 0 },
      { t: new Date(T + 2 * HOUR).toISOString(), acquisitions: 7, ownerChanges: 0, expiries: 0 },
    ]);
  });
});
