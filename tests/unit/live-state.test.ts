import { afterEach, describe, expect, it, vi } from "vitest";
import type { Lock } from "../../lib/contract/lock";
import type { AgentSnapshot } from "../../lib/contract/socket";
import { LiveState } from "../../lib/server/live-state";
import type { LockOrder } from "../../lib/server/lock-order";
import { testLock } from "../harness/lock-fixture";

const lock = (id: string, ttlMs: number | null): Lock => testLock(id, { resource: id, ttlMs });

/** Agent a1's snapshot of `locks` (one part of it with `part`). */
const snapshot = (locks: Lock[], part?: { index: number; last: boolean }): AgentSnapshot => ({
  agentId: "a1",
  agentName: "a1",
  version: "x",
  at: "",
  sources: [],
  locks,
  ...(part ? { part } : {}),
});

describe("LiveState", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("merges one sorted order per message, and the others once messages pause, one per turn of the loop", async () => {
    vi.useFakeTimers();
    const s = new LiveState(() => 1000);
    const order = (s as unknown as { order: LockOrder }).order;
    const part = (from: number, index: number, last: boolean) =>
      s.applySnapshot(
        snapshot(
          Array.from({ length: 2500 }, (_, i) => lock(`L${from + i}`, 60_000)),
          { index, last },
        ),
      );
    part(0, 0, false);
    part(2500, 1, false);
    // Messages still coming: nothing merged between them.
    await vi.advanceTimersByTimeAsync(20);
    part(5000, 2, true);
    // Then quiet: the orders still due are merged, none left for the next query or message to merge.
    await vi.advanceTimersByTimeAsync(100);
    expect(order.settle()).toBeNull();
    expect(
      s.query({ filter: {}, sort: { key: "resource", desc: false }, limit: 1, cursor: null, offset: 0 }).total,
    ).toBe(7500);
  });

  it("recomputes TTLs against its own clock since receipt", () => {
    let now = 1000;
    const s = new LiveState(() => now);
    s.applySnapshot(snapshot([lock("L1", 5000), lock("L2", null)]));
    now = 3000;
    expect(s.lock("L1")!.ttlMs).toBe(3000);
    expect(s.lock("L2")!.ttlMs).toBeNull();
    now = 99_000;
    expect(s.lock("L1")!.ttlMs).toBe(0);
  });

  it("counts an update's TTL down from its receipt and says when that was", () => {
    let now = 10_000;
    const s = new LiveState(() => now);
    // The update arrived at 9,000; its events were stored by 10,000, when the state was applied.
    s.applyUpdate({ agentId: "a1", at: "", sources: [], upserts: [lock("L1", 5000)], removed: [], events: [] }, 9000);
    now = 12_000;
    expect(s.lock("L1")).toMatchObject({ ttlMs: 2000, receivedAt: new Date(9000).toISOString() });
    expect(
      s.query({ filter: {}, sort: { key: "ttl", desc: false }, limit: 1, cursor: null, offset: 0 }).page[0]!
        .expiresAtMs,
    ).toBe(14_000);
  });

  it("a snapshot replaces the agent's locks and reports the ones that went", () => {
    const s = new LiveState();
    s.applySnapshot(snapshot([lock("L1", 1), lock("L2", 1)]));
    const d = s.applySnapshot(snapshot([lock("L2", 1)]));
    expect(d.removed.map((e) => e.lock.id)).toEqual(["L1"]);
    expect(s.locks().map((l) => l.id)).toEqual(["L2"]);
  });

  it("updates patch, and a disconnect keeps locks but marks sources down", () => {
    const s = new LiveState();
    const src = { id: "redis://x", kind: "redis" as const, up: true, locks: 1, agentId: "a1" };
    s.applyUpdate({ agentId: "a1", at: "", sources: [src], upserts: [lock("L1", 1)], removed: [], events: [] });
    s.applyUpdate({ agentId: "a1", at: "", sources: [src], upserts: [lock("L3", 1)], removed: ["L1"], events: [] });
    expect(s.locks().map((l) => l.id)).toEqual(["L3"]);
    s.disconnect("a1");
    expect(s.locks()).toHaveLength(1);
    expect(s.sources()[0]).toMatchObject({ up: false, error: "agent a1 disconnected" });
    expect(s.agentList()[0]!.connected).toBe(false);
  });

  it("a snapshot in parts replaces the agent's locks as parts arrive and drops the rest only after the last", () => {
    const s = new LiveState();
    const snap = (locks: Lock[], part?: { index: number; last: boolean }) => s.applySnapshot(snapshot(locks, part));
    snap([lock("L1", 1), lock("L2", 1), lock("L3", 1)]);
    snap([lock("L2", 1)], { index: 0, last: false });
    // Mid-snapshot nothing is dropped: the page never empties while a large snapshot streams in.
    expect(s.locks().map((l) => l.id)).toEqual(["L1", "L2", "L3"]);
    snap([lock("L4", 1)], { index: 1, last: false });
    const d = snap([lock("L3", 1)], { index: 2, last: true });
    expect(d.removed.map((e) => e.lock.id)).toEqual(["L1"]);
    expect(
      s
        .locks()
        .map((l) => l.id)
        .sort(),
    ).toEqual(["L2", "L3", "L4"]);
  });

  it("groups locks by key pattern, source or library, groups with hazards first", () => {
    let now = 10_000;
    const s = new LiveState(() => now);
    const hazard = { code: "no-ttl", severity: "warning" as const, message: "m" };
    s.applySnapshot(
      snapshot([
        { ...lock("L1", 1), resource: "lock:order:1", since: new Date(1000).toISOString() },
        { ...lock("L2", 1), resource: "lock:order:2", since: new Date(4000).toISOString(), hazards: [hazard] },
        { ...lock("L3", 1), resource: "lock:user:7" },
        { ...lock("L4", 1), resource: "lock:user:8" },
        { ...lock("L5", 1), resource: "lock:user:9", library: "redisson" },
      ]),
    );
    now = 11_000;
    expect(s.groups("pattern")).toEqual([
      {
        key: "lock:order:*",
        count: 2,
        withHazards: 1,
        byHazard: { "no-ttl": 1 },
        byBackend: { redis: 2 },
        longestHoldMs: 10_000,
      },
      { key: "lock:user:*", count: 3, withHazards: 0, byHazard: {}, byBackend: { redis: 3 }, longestHoldMs: 11_000 },
    ]);
    expect(s.groups("library").map((g) => [g.key, g.count])).toEqual([
      ["generic", 4],
      ["redisson", 1],
    ]);
    expect(s.groups("source", { hazard: "any" }).map((g) => [g.key, g.count])).toEqual([["redis://127.0.0.1:1/0", 1]]);
  });
});
