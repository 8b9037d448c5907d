import { describe, expect, it } from "vitest";
import { historyHazards, nextHazardChangeMs, type HoldingHistory } from "../../agent/core/history-hazards";
import { LockTracker, type ObservedLock } from "../../agent/core/tracker";

const OPTS = { maxHoldMs: 15 * 60_000, rememberMs: 5 * 60_000 };
const T = 10_000_000;
const codes = (h: HoldingHistory, ttl: number | null, now: number) =>
  historyHazards(h, ttl, now, OPTS).map((x) => x.code);

describe("historyHazards", () => {
  const cases: Array<[string, HoldingHistory, number | null, number, string[]]> = [
    ["a fresh holding: nothing", { sinceMs: T, renewals: [], maxTtlMs: 30_000 }, 29_000, T + 1000, []],
    [
      "a watchdog renewing every 10 s: nothing",
      { sinceMs: T, renewals: [T + 10_000, T + 20_000, T + 30_000], maxTtlMs: 30_000 },
      25_000,
      T + 35_000,
      [],
    ],
    [
      "renewals stopped for more than twice their period",
      { sinceMs: T, renewals: [T + 10_000, T + 20_000, T + 30_000], maxTtlMs: 30_000 },
      5_000,
      T + 55_000,
      ["renewals-stopped"],
    ],
    [
      "a single renewal is not a pattern",
      { sinceMs: T, renewals: [T + 10_000], maxTtlMs: 30_000 },
      1_000,
      T + 39_000,
      [],
    ],
    [
      "still renewed past the hold limit: zombie",
      { sinceMs: T, renewals: [T + 20 * 60_000 - 20_000, T + 20 * 60_000 - 10_000], maxTtlMs: 30_000 },
      25_000,
      T + 20 * 60_000,
      ["zombie-renewal"],
    ],
    [
      "held past the limit without renewals",
      { sinceMs: T, renewals: [], maxTtlMs: null },
      null,
      T + 16 * 60_000,
      ["held-too-long"],
    ],
    [
      "held more than ten leases",
      { sinceMs: T, renewals: [T + 50_000, T + 100_000], maxTtlMs: 10_000 },
      9_000,
      T + 101_000,
      ["held-past-lease"],
    ],
    [
      "took over an expired lease, remembered for a while",
      { sinceMs: T, renewals: [], maxTtlMs: 5000, tookOverExpired: { previousOwner: "a", atMs: T } },
      4000,
      T + 1000,
      ["expired-while-held"],
    ],
    [
      "…and forgotten after rememberMs",
      { sinceMs: T, renewals: [], maxTtlMs: 5000, tookOverExpired: { previousOwner: "a", atMs: T } },
      4000,
      T + 6 * 60_000,
      ["held-past-lease"],
    ],
    [
      "a token back after its release",
      { sinceMs: T, renewals: [], maxTtlMs: 5000, reappearedAfterRelease: { atMs: T } },
      4000,
      T + 100,
      ["zombie-renewal"],
    ],
  ];
  for (const [name, h, ttl, now, want] of cases) it(name, () => expect(codes(h, ttl, now)).toEqual(want));

  describe("nextHazardChangeMs", () => {
    it("names each boundary of the table's holdings: the hazards are the same until then and differ at it", () => {
      for (const [name, h, ttl, now] of cases) {
        const next = nextHazardChangeMs(h, now, OPTS);
        const before = codes(h, ttl, now);
        // Every millisecond would be 10^6 calls per case; every 97th and the last before the boundary find an
        // off-by-one as well.
        for (let t = now; t < Math.min(next, now + 30 * 60_000); t += 97)
          expect(codes(h, ttl, t), name).toEqual(before);
        if (next !== Infinity) expect(codes(h, ttl, next - 1), name).toEqual(before);
      }
    });

    it("is the moment a hold crosses the limit, renewals fall silent, or a remembered takeover is forgotten", () => {
      const fresh: HoldingHistory = { sinceMs: T, renewals: [], maxTtlMs: null };
      expect(nextHazardChangeMs(fresh, T + 1000, OPTS)).toBe(T + 15 * 60_000 + 1);
      expect(codes(fresh, null, T + 15 * 60_000 + 1)).toEqual(["held-too-long"]);
      const watchdog: HoldingHistory = { sinceMs: T, renewals: [T + 10_000, T + 20_000], maxTtlMs: 30_000 };
      expect(nextHazardChangeMs(watchdog, T + 20_000, OPTS)).toBe(T + 40_201);
      expect(codes(watchdog, 10_000, T + 40_201)).toEqual(["renewals-stopped"]);
      const takeover: HoldingHistory = {
        sinceMs: T,
        renewals: [],
        maxTtlMs: 60_000,
        tookOverExpired: { previousOwner: "a", atMs: T },
      };
      expect(nextHazardChangeMs(takeover, T + 1000, OPTS)).toBe(T + 5 * 60_000);
      expect(codes(takeover, 50_000, T + 5 * 60_000)).toEqual([]);
    });

    it("is never for a holding nothing can change with time (no hold limit, no lease, nothing remembered)", () => {
      const h: HoldingHistory = { sinceMs: T, renewals: [], maxTtlMs: null };
      expect(nextHazardChangeMs(h, T, { maxHoldMs: 0, rememberMs: 60_000 })).toBe(Infinity);
    });
  });
});

describe("LockTracker history", () => {
  let n = 0;
  const mk = (owner: string, ttl: number | null, at: number): { lock: ObservedLock; observedAtMs: number } => ({
    lock: {
      id: "L",
      backend: "redis",
      source: "s",
      resource: "r",
      owner,
      library: "generic",
      rule: "x",
      ttlMs: ttl,
      holder: null,
      waiters: [],
      observedAt: new Date(at).toISOString(),
      kind: "string",
      valuePreview: null,
      hazards: [],
      agentId: "a",
    },
    observedAtMs: at,
  });
  const tracker = () => new LockTracker({ agentId: "a", newId: () => `e-${++n}-xxxxxxxx` });

  it("flags the new holder when it took over an expired lease, and sends the hazard as an upsert", () => {
    const t = tracker();
    t.apply([mk("slow-holder-token-aaaa", 500, T)], []);
    const out = t.apply([mk("second-holder-token-bb", 5000, T + 1000)], []);
    expect(out.events[0]).toMatchObject({ type: "owner-changed", detail: { afterExpiry: true } });
    expect(out.upserts[0]!.hazards.map((h) => h.code)).toContain("expired-while-held");
  });

  it("raises renewals-stopped once a watchdog goes quiet", () => {
    const t = tracker();
    let at = T;
    t.apply([mk("owner-token-0123456789", 30_000, at)], []);
    for (let i = 1; i <= 3; i++) t.apply([mk("owner-token-0123456789", 30_000, (at = T + i * 10_000))], []);
    // No renewal for 25 s: TTL just counts down.
    const out = t.apply([mk("owner-token-0123456789", 5_000, T + 55_000)], []);
    expect(out.upserts[0]!.hazards.map((h) => h.code)).toEqual(["renewals-stopped"]);
  });

  it("flags a random token that comes back after its release", () => {
    const t = tracker();
    t.apply([mk("zombie-token-0123456789", 5000, T)], []);
    t.apply([], [{ id: "L", atMs: T + 500 }]);
    const out = t.apply([mk("zombie-token-0123456789", 5000, T + 1000)], []);
    expect(out.upserts[0]!.hazards.map((h) => h.code)).toEqual(["zombie-renewal"]);
  });

  it("does not flag a short literal owner that comes back (SETNX key 1)", () => {
    const t = tracker();
    t.apply([mk("1", null, T)], []);
    t.apply([], [{ id: "L", atMs: T + 500 }]);
    const out = t.apply([mk("1", 5000, T + 1000)], []);
    expect(out.upserts[0]!.hazards).toEqual([]);
  });
});
