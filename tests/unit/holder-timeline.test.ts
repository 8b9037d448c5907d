import { describe, expect, it } from "vitest";
import { axisTicks, holderTimeline, MIN_AXIS_MS, type Holding } from "../../components/history/holder-timeline-model";
import type { LockEvent } from "../../lib/contract/lock";
import { resourceHistory } from "../../lib/server/history";

const T = Date.parse("2026-12-01T10:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;
let n = 0;
function ev(type: LockEvent["type"], owner: string, atMs: number, detail?: LockEvent["detail"]): LockEvent {
  return {
    id: `ev-${++n}-xxxxxxxx`,
    agentId: "a1",
    type,
    lockId: "L1",
    backend: "redis",
    source: "redis://127.0.0.1:1/0",
    resource: "lock:orders",
    owner,
    at: iso(atMs),
    ...(detail ? { detail } : {}),
  };
}
/** Events -> the history API's timeline -> lanes, as the detail page does it. */
function timelineOf(events: LockEvent[], now: number, extra: Partial<Parameters<typeof holderTimeline>[1]> = {}) {
  const h = resourceHistory("lock:orders", events, HOUR, now);
  return holderTimeline(h.timeline, {
    start: now - HOUR,
    now,
    zone: "utc",
    total: h.timelineTotal,
    fit: false,
    ...extra,
  });
}

describe("holders timeline: events to lanes", () => {
  it("a release, an expiry, a takeover after expiry and a quick handover end their bars in words", () => {
    const now = T + 10 * 60_000;
    const m = timelineOf(
      [
        ev("acquired", "a", T),
        ev("released", "a", T + 60_000, { heldMs: 60_000 }),
        ev("acquired", "b", T + 120_000),
        ev("expired", "b", T + 180_000),
        ev("acquired", "c", T + 240_000),
        ev("owner-changed", "d", T + 300_000, { afterExpiry: true }),
        ev("owner-changed", "e", T + 360_000, { afterExpiry: false }),
      ],
      now,
    );
    expect(m.lanes.map((l) => [l.owner, l.bars.map((b) => b.end)])).toEqual([
      ["a", ["released"]],
      ["b", ["expired"]],
      ["c", ["taken-over"]],
      ["d", ["handed-over"]],
      ["e", ["holding"]],
    ]);
    const [a] = m.lanes[0]!.bars;
    expect(a!.label).toBe("a: held from 2026-12-01 10:00:00 UTC to 2026-12-01 10:01:00 UTC, 1m 0s, released");
    expect(m.lanes[2]!.bars[0]!.label).toContain("taken over after its lease ran out");
    // The window is the last hour: 10:00 is 50 minutes in; a minute is 1/60 of the hour, less the axis's margin.
    expect(a!.left).toBeCloseTo(((50 * 60_000) / (HOUR * 1.03)) * 100, 5);
    expect(a!.width).toBeCloseTo((60_000 / (HOUR * 1.03)) * 100, 5);
  });

  it("an open holding runs to now, is marked open and says it is still held", () => {
    const now = T + 90_000;
    const m = timelineOf([ev("acquired", "worker-7", T)], now);
    const bar = m.lanes[0]!.bars[0]!;
    expect(bar).toMatchObject({ open: true, end: "holding", to: now, clipped: false });
    expect(bar.left + bar.width).toBeCloseTo(m.nowPct, 5);
    expect(m.nowPct).toBeLessThan(100);
    expect(bar.label).toBe("worker-7: held from 2026-12-01 10:00:00 UTC to now, 1m 30s, still held");
  });

  it("a holder seen live whose acquire came before the window is drawn from the window's start", () => {
    const now = T;
    const m = holderTimeline([], {
      start: now - HOUR,
      now,
      zone: "utc",
      live: [{ owner: "nightly", since: iso(now - 5 * HOUR) }],
    });
    expect(m.lanes).toHaveLength(1);
    expect(m.lanes[0]!.bars[0]).toMatchObject({ open: true, clipped: true, left: 0 });
    expect(m.lanes[0]!.bars[0]!.label).toContain("5h 0m, still held");
    // …but not twice when the window's events show it already.
    const again = holderTimeline([{ owner: "nightly", from: iso(now - 100), to: null, end: null }], {
      start: now - HOUR,
      now,
      zone: "utc",
      live: [{ owner: "nightly", since: iso(now - 100) }],
    });
    expect(again.lanes[0]!.bars).toHaveLength(1);
  });

  it("events out of order pair up as they happened", () => {
    const now = T + 60_000;
    const inOrder = [ev("acquired", "a", T), ev("released", "a", T + 1000), ev("acquired", "b", T + 2000)];
    const shuffled = [inOrder[2]!, inOrder[0]!, inOrder[1]!];
    const m = timelineOf(shuffled, now);
    expect(m.lanes.map((l) => [l.owner, l.bars.map((b) => [b.end, b.to - b.from])])).toEqual([
      ["a", [["released", 1000]]],
      ["b", [["holding", 58_000]]],
    ]);
    // Holdings handed over out of order are drawn in time order as well.
    const h: Holding[] = [
      { owner: "late", from: iso(T + 5000), to: null, end: null },
      { owner: "early", from: iso(T), to: iso(T + 1000), end: "released" },
    ];
    expect(holderTimeline(h, { start: T - HOUR, now, zone: "utc" }).lanes.map((l) => l.owner)).toEqual([
      "early",
      "late",
    ]);
  });

  it("a window with no events has no lanes but still an axis and a now marker", () => {
    const now = T;
    const m = timelineOf([], now);
    expect(m.lanes).toEqual([]);
    expect(m.holdings).toBe(0);
    expect(m.earlierHoldings).toBe(0);
    expect(m.ticks.length).toBeGreaterThan(1);
    expect(m.nowPct).toBeGreaterThan(90);
  });

  it("a semaphore's several holders at once get a lane each, each permit closed on its own", () => {
    const now = T + 60_000;
    const permit = { permit: true };
    const m = timelineOf(
      [
        ev("acquired", "p1", T, permit),
        ev("acquired", "p2", T + 100, permit),
        ev("acquired", "p3", T + 200, permit),
        ev("released", "p1", T + 5000, { ...permit, heldMs: 5000 }),
        ev("expired", "p2", T + 6000, permit),
      ],
      now,
    );
    expect(m.lanes.map((l) => [l.owner, l.bars.map((b) => b.end)])).toEqual([
      ["p1", ["released"]],
      ["p2", ["expired"]],
      ["p3", ["holding"]],
    ]);
    expect(m.maxConcurrent).toBe(3);
  });

  it("150 holders: the latest 20 are drawn, the earlier 130 counted, and what the API cut is counted too", () => {
    const now = T + HOUR;
    const events = Array.from({ length: 150 }, (_, i) => [
      ev("acquired", `holder-${i}`, T + i * 20_000),
      ev("released", `holder-${i}`, T + i * 20_000 + 10_000, { heldMs: 10_000 }),
    ]).flat();
    const h = resourceHistory("lock:orders", events, 2 * HOUR, now);
    expect(h.timeline).toHaveLength(150);
    const m = holderTimeline(h.timeline, { start: now - 2 * HOUR, now, zone: "utc", total: h.timelineTotal });
    expect(m.lanes).toHaveLength(20);
    expect(m.lanes[0]!.owner).toBe("holder-130");
    expect(m.lanes[19]!.owner).toBe("holder-149");
    expect(m).toMatchObject({ holders: 150, holdings: 150, earlierHolders: 130, earlierHoldings: 130 });
    for (const l of m.lanes) for (const b of l.bars) expect(b.left + b.width).toBeLessThanOrEqual(100);

    // 250 holdings: the API lists the latest 200 and says 250; the 50 it cut are counted as earlier.
    const many = Array.from({ length: 250 }, (_, i) => [
      ev("acquired", `h-${i}`, T + i * 10_000),
      ev("released", `h-${i}`, T + i * 10_000 + 5000),
    ]).flat();
    const cut = resourceHistory("lock:orders", many, 2 * HOUR, T + HOUR);
    expect(cut.timeline).toHaveLength(200);
    expect(cut.timelineTotal).toBe(250);
    const mm = holderTimeline(cut.timeline, { start: T - HOUR, now: T + HOUR, zone: "utc", total: 250 });
    expect(mm).toMatchObject({ holdings: 250, earlierHolders: 180, earlierHoldings: 230 });
  });

  it("the axis fits the drawn holdings: 30 s of handovers in a 1 h window fill the axis, not its last sliver", () => {
    const now = T + HOUR;
    const events = Array.from({ length: 6 }, (_, i) => [
      ev("acquired", `d-${i}`, now - 30_000 + i * 5000),
      ev("released", `d-${i}`, now - 30_000 + i * 5000 + 4000),
    ]).flat();
    const m = timelineOf(events, now, { fit: true });
    expect(m.fitted).toBe(true);
    expect(m.start).toBe(now - 30_000 - 1500); // 5% of the drawn span before the first holding
    const first = m.lanes[0]!.bars[0]!;
    expect(first.left).toBeGreaterThan(0);
    expect(first.left).toBeLessThan(10);
    expect(first.width).toBeGreaterThan(10);
    expect(m.ticks.every((t) => /^\d{2}:\d{2}:\d{2}$/.test(t.label))).toBe(true);
    // An empty window keeps the whole window on the axis.
    expect(timelineOf([], now, { fit: true })).toMatchObject({ fitted: false, start: now - HOUR });
  });

  it("holdings within a second still get an axis of two whole-second ticks or more", () => {
    for (const offset of [0, 250, 500, 999]) {
      const first = T + offset;
      const now = first + 400;
      const m = timelineOf(
        [ev("acquired", "a", first), ev("released", "a", first + 100), ev("acquired", "b", first + 200)],
        now,
        {
          fit: true,
        },
      );
      expect(m.fitted).toBe(true);
      expect(now - m.start).toBe(MIN_AXIS_MS);
      expect(m.ticks.length).toBeGreaterThanOrEqual(2);
      expect(m.ticks.every((t) => /^\d{2}:\d{2}:\d{2}$/.test(t.label))).toBe(true);
    }
  });

  it("one holder's repeated holdings share its lane", () => {
    const now = T + 60_000;
    const m = timelineOf([ev("acquired", "a", T), ev("released", "a", T + 1000), ev("acquired", "a", T + 2000)], now);
    expect(m.lanes).toHaveLength(1);
    expect(m.lanes[0]!.bars.map((b) => b.end)).toEqual(["released", "holding"]);
  });
});

describe("axis ticks in the user's time format", () => {
  it("whole minutes in UTC over an hour, at most the ticks asked for", () => {
    const ticks = axisTicks(T, T + HOUR, T + HOUR * 1.03, "utc", 6);
    expect(ticks.map((t) => t.label)).toEqual(["10:00", "10:10", "10:20", "10:30", "10:40", "10:50", "11:00"]);
    expect(ticks[0]!.pct).toBe(0);
  });

  it("in the browser's zone the ticks fall on its whole hours, also for a zone half an hour off", () => {
    const berlin = axisTicks(T - 1, T + 6 * HOUR, T + 6.2 * HOUR, "local", 7, "Europe/Berlin");
    expect(berlin.map((t) => t.label)).toEqual(["11:00", "12:00", "13:00", "14:00", "15:00", "16:00", "17:00"]);
    expect(berlin[0]!.at).toBe(T); // 10:00 UTC is 11:00 CET
    const kolkata = axisTicks(T, T + 6 * HOUR, T + 6.2 * HOUR, "local", 6, "Asia/Kolkata");
    expect(kolkata[0]).toMatchObject({ label: "16:00", at: T + 30 * 60_000 }); // 10:30 UTC is 16:00 IST
  });

  it("seconds for a short window, dates for a week", () => {
    expect(axisTicks(T, T + 30_000, T + 31_000, "utc", 6).map((t) => t.label)).toEqual([
      "10:00:00",
      "10:00:05",
      "10:00:10",
      "10:00:15",
      "10:00:20",
      "10:00:25",
      "10:00:30",
    ]);
    const week = axisTicks(T, T + 7 * 24 * HOUR, T + 7.2 * 24 * HOUR, "utc", 7);
    expect(week.map((t) => t.label)).toEqual(["12-02", "12-03", "12-04", "12-05", "12-06", "12-07", "12-08"]);
  });

  it("no ticks for an empty or reversed window", () => {
    expect(axisTicks(T, T, T, "utc", 6)).toEqual([]);
    expect(axisTicks(T, T - 1, T, "utc", 6)).toEqual([]);
  });
});
