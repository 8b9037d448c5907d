import { describe, expect, it } from "vitest";
import type { Lock, LockEvent, SourceStatus } from "../../lib/contract/lock";
import { SourceCap } from "../../agent/core/source-cap";
import { snapshotParts } from "../../agent/transport/dashboard-link";
import { testLock } from "../harness/lock-fixture";

const SRC = "redis://127.0.0.1:1/0";

const lock = (id: string, source = SRC, extra: Partial<Lock> = {}): Lock =>
  testLock(id, { source, resource: id, ttlMs: 1000, ...extra });

const ev = (lockId: string, type: LockEvent["type"] = "acquired", source = SRC): LockEvent => ({
  id: `e-${lockId}-${type}`,
  agentId: "a1",
  type,
  lockId,
  backend: "redis",
  source,
  resource: lockId,
  owner: "o",
  at: new Date(0).toISOString(),
});

const status = (id = SRC, locks = 0): SourceStatus => ({ id, kind: "redis", up: true, locks, agentId: "a1" });

describe("SourceCap", () => {
  it("publishes at most the cap per source, holds back the rest with their events, and counts them", () => {
    const cap = new SourceCap(2);
    const out = cap.filter(
      [ev("a"), ev("b"), ev("c"), ev("x", "acquired", "other")],
      [lock("a"), lock("b"), lock("c"), lock("x", "other")],
      [],
    );
    expect(out.upserts.map((l) => l.id)).toEqual(["a", "b", "x"]);
    expect(out.events.map((e) => e.lockId)).toEqual(["a", "b", "x"]);
    const s = cap.status(status(SRC, 3));
    expect(s).toMatchObject({ locks: 2, untracked: 1 });
    expect(s.hazards).toEqual([
      expect.objectContaining({
        code: "too-many-locks",
        severity: "critical",
        message: expect.stringContaining("3 lock keys seen, 2 shown"),
      }),
    ]);
    // Another source below the cap is untouched.
    expect(cap.status(status("other", 1))).toEqual(status("other", 1));
  });

  it("a held-back lock that changes or goes stays unheard of; a freed place goes to the oldest waiting lock", () => {
    const cap = new SourceCap(1);
    cap.filter([], [lock("a"), lock("b"), lock("c")], []);
    // b renewed while waiting: nothing reaches the dashboard.
    expect(cap.filter([ev("b", "renewed")], [lock("b", SRC, { owner: "o2" })], [])).toEqual({
      events: [],
      upserts: [],
      removed: [],
    });
    // c released while waiting: nothing either.
    expect(cap.filter([ev("c", "released")], [], ["c"])).toEqual({ events: [], upserts: [], removed: [] });
    // a goes: b (with its latest state) takes the place.
    const out = cap.filter([ev("a", "released")], [], ["a"]);
    expect(out.removed).toEqual(["a"]);
    expect(out.events.map((e) => e.lockId)).toEqual(["a"]);
    expect(out.upserts).toEqual([lock("b", SRC, { owner: "o2" })]);
    expect(cap.status(status())).toEqual(status());
  });

  it("a snapshot sends only the published locks", () => {
    const cap = new SourceCap(2);
    const all = [lock("a"), lock("b"), lock("c")];
    cap.filter([], all, []);
    expect(cap.locks(all).map((l) => l.id)).toEqual(["a", "b"]);
  });
});

describe("snapshotParts", () => {
  it("cuts by count and by bytes, never leaves a part empty but the only one", () => {
    const locks = Array.from({ length: 25 }, (_, i) => lock(`L${String(i).padStart(2, "0")}`));
    expect(snapshotParts(locks, 10, 1e9).map((p) => p.length)).toEqual([10, 10, 5]);
    const size = JSON.stringify(locks[0]).length + 1;
    expect(snapshotParts(locks, 1000, size * 4).map((p) => p.length)).toEqual([4, 4, 4, 4, 4, 4, 1]);
    // A lock larger than the byte bound travels alone.
    expect(snapshotParts(locks.slice(0, 2), 1000, 10).map((p) => p.length)).toEqual([1, 1]);
    expect(snapshotParts([])).toEqual([[]]);
  });
});
