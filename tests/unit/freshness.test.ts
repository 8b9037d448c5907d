import { describe, expect, it } from "vitest";
import { ago, liveFreshness, sourceFreshness, staleSourceIds } from "../../components/live/freshness";
import type { SourceStatus } from "../../lib/contract/lock";

const NOW = Date.parse("2026-12-01T10:00:00Z");

describe("liveFreshness", () => {
  it("live: not stale, the real clock", () => {
    expect(liveFreshness("live", NOW - 500, NOW)).toEqual({ stale: false, banner: null, clock: NOW });
  });

  it("connection lost: stale, a banner with the age of the last update, countdowns frozen at it", () => {
    const f = liveFreshness("reconnecting", NOW - 12_000, NOW);
    expect(f.stale).toBe(true);
    expect(f.clock).toBe(NOW - 12_000);
    expect(f.banner).toContain("last update 12 s ago");
    expect(f.banner).toContain("TTLs are frozen");
  });

  it("first connect in progress is not stale; a failed one with nothing received says so", () => {
    expect(liveFreshness("connecting", null, NOW).stale).toBe(false);
    expect(liveFreshness("reconnecting", null, NOW)).toMatchObject({ stale: true, clock: NOW });
  });

  it("ago is coarse", () => {
    expect([ago(400), ago(12_400), ago(125_000), ago(7_300_000), ago(-5)]).toEqual([
      "0 s ago",
      "12 s ago",
      "2 min ago",
      "2 h ago",
      "0 s ago",
    ]);
  });
});

describe("sourceFreshness", () => {
  const src = (over: Partial<SourceStatus>) => ({
    id: "redis://127.0.0.1:1/0",
    kind: "redis" as const,
    up: true,
    locks: 1,
    agentId: "a",
    ...over,
  });

  it("down is stale, with the error", () => {
    expect(sourceFreshness(src({ up: false, error: "ECONNREFUSED" }), NOW)).toMatchObject({
      stale: true,
      reason: "down: ECONNREFUSED",
    });
  });

  it("data older than its poll interval allows is stale", () => {
    const fresh = src({ lastPollAt: new Date(NOW - 1500).toISOString() });
    const old = src({ lastPollAt: new Date(NOW - 12_000).toISOString() });
    expect(sourceFreshness(fresh, NOW).stale).toBe(false);
    expect(sourceFreshness(old, NOW)).toMatchObject({ stale: true, reason: "last read 12 s ago" });
    // a slow poll interval stretches the bound
    expect(sourceFreshness({ ...old, pollIntervalMs: 5000 }, NOW).stale).toBe(false);
  });

  it("without a read time only `up` counts; staleSourceIds collects the stale ones", () => {
    expect(sourceFreshness(src({}), NOW).stale).toBe(false);
    const ids = staleSourceIds([src({ id: "a" }), src({ id: "b", up: false })], NOW);
    expect([...ids]).toEqual(["b"]);
  });
});
