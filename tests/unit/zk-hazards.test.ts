import { describe, expect, it } from "vitest";
import { T0, node, seq } from "./zk-fixtures";
import {
  planCuratorSemaphore,
  planKazooSemaphore,
  planQueue,
  type ClientWatchTable,
} from "../../agent/sources/zookeeper/queue";
import {
  DEFAULT_THRESHOLDS,
  emptyParentsHazard,
  herdHazard,
  stuckCandidates,
  zkHazards,
} from "../../agent/sources/zookeeper/zk-hazards";

const seeds = (n: number) => Array.from({ length: n }, (_, i) => node(`Lock${seq(i)}`, i));

function table(
  byPath: Record<string, string[]>,
  hosts: string[] = [],
  complete = true,
  extra: Partial<ClientWatchTable> = {},
): ClientWatchTable {
  const bySession = new Map<string, Set<string>>();
  for (const [p, ss] of Object.entries(byPath))
    for (const s of ss) bySession.set(s, (bySession.get(s) ?? new Set()).add(p));
  return {
    byPath: new Map(Object.entries(byPath).map(([k, v]) => [k, new Set(v)])),
    bySession,
    hosts: new Map(hosts.map((h) => [h, "127.0.0.1:1"])),
    complete,
    sessionsComplete: complete,
    ...extra,
  };
}

const codes = (h: Array<{ code: string }>) => h.map((x) => x.code).sort();

describe("zkHazards", () => {
  it("a healthy queue has none", () => {
    const shape = planQueue("/p", seeds(3))!;
    const t = table({ "/p/Lock0000000000": ["0x1001"], "/p/Lock0000000001": ["0x1002"] }, [
      "0x1000",
      "0x1001",
      "0x1002",
    ]);
    expect(zkHazards({ shape, table: t, nowMs: T0 + 5000 })).toEqual([]);
  });

  it("persistent contender: critical, says whether it holds", () => {
    const shape = planQueue("/p", [node(`Lock${seq(0)}`, 0, { session: "0x0" }), node(`Lock${seq(1)}`, 1)])!;
    const [h] = zkHazards({ shape, table: null, nowMs: T0 });
    expect(h).toMatchObject({ code: "persistent-contender", severity: "critical" });
    expect(h!.message).toContain("stays held");
  });

  it("long wait: only waiters beyond the threshold; the message does not change from poll to poll", () => {
    const shape = planQueue("/p", seeds(3))!;
    const at = (ms: number) =>
      zkHazards({ shape, table: null, nowMs: ms, thresholds: { ...DEFAULT_THRESHOLDS, longWaitMs: 10_000 } });
    expect(at(T0 + 10_500)).toEqual([]);
    const later = at(T0 + 11_500);
    expect(later).toHaveLength(1);
    expect(later[0]!.message).toContain("1 waiter queued longer than 10 s");
    expect(at(T0 + 11_600)[0]!.message).toBe(later[0]!.message);
  });

  it("holder session not connected anywhere (only when every server answered cons)", () => {
    const shape = planQueue("/p", seeds(2))!;
    expect(codes(zkHazards({ shape, table: table({}, ["0x1001"]), nowMs: T0 }))).toEqual([
      "holder-session-disconnected",
      "watch-not-visible",
    ]);
    expect(zkHazards({ shape, table: table({}, ["0x1001"], false), nowMs: T0 })).toEqual([]);
  });

  it("sequence wrapped: negative and positive suffixes together", () => {
    const shape = planQueue("/p", [node(`Lock${seq(2147483647)}`, 0), node(`Lock${seq(-2147483648)}`, 1)])!;
    expect(codes(zkHazards({ shape, table: null, nowMs: T0 }))).toEqual(["sequence-wrapped"]);
  });

  it("mixed recipes under one parent", () => {
    const shape = planQueue("/p", [node(`Lock${seq(0)}`, 0), node(`other_${seq(1)}`, 1)])!;
    expect(codes(zkHazards({ shape, table: null, nowMs: T0 }))).toEqual(["mixed-recipes"]);
  });

  it("over capacity: more holders than a kazoo semaphore's max leases", () => {
    const hex = (n: number) => n.toString(16).padStart(32, "0");
    const shape = planKazooSemaphore("/pool", [node(hex(1), 1), node(hex(2), 2), node(hex(3), 3)], [], 2)!;
    expect(codes(zkHazards({ shape, table: null, nowMs: T0 }))).toEqual(["over-capacity"]);
  });

  it("empty lock parents piling up next to this lock", () => {
    const shape = planQueue("/locks/a", seeds(1))!;
    expect(codes(zkHazards({ shape, table: null, nowMs: T0, emptySiblings: 250 }))).toEqual(["empty-lock-parents"]);
    expect(zkHazards({ shape, table: null, nowMs: T0, emptySiblings: 3 })).toEqual([]);
    expect(emptyParentsHazard("/locks", 99, 100)).toBeNull();
    expect(emptyParentsHazard("/locks", 100, 100)!.message).toContain("100 empty lock parents under /locks");
  });
});

describe("herd", () => {
  const lock = (i: number) => node(`lock-${seq(i)}`, i, { data: Buffer.from("lock"), dataLength: 4 });

  it("inferred for zk-lock (waiters on the parent's children), from the threshold on", () => {
    const five = planQueue(
      "/locks/k",
      Array.from({ length: 6 }, (_, i) => lock(i)),
    )!;
    expect(herdHazard(five, null, 5)?.message).toContain("5 waiters watch the children of /locks/k");
    const four = planQueue(
      "/locks/k",
      Array.from({ length: 5 }, (_, i) => lock(i)),
    )!;
    expect(herdHazard(four, null, 5)).toBeNull();
  });

  it("a predecessor chain is no herd", () => {
    expect(herdHazard(planQueue("/p", seeds(20))!, null, 5)).toBeNull();
  });

  it("observed: many sessions on one node", () => {
    const shape = planQueue("/p", seeds(2))!;
    const t = table({ "/p/Lock0000000000": ["0xa1", "0xa2", "0xa3", "0xa4", "0xa5"] });
    expect(herdHazard(shape, t, 5)?.message).toContain("5 sessions watch Lock0000000000");
  });

  it("observed: readers all waiting on one writer is by design", () => {
    const uuid = (n: number) => `3f2a9c4e-1b2d-4c3e-9f8a-${String(n).padStart(12, "0")}`;
    const kids = [
      node(`_c_${uuid(0)}-__WRIT__${seq(0)}`, 0),
      ...[1, 2, 3, 4, 5].map((i) => node(`_c_${uuid(i)}-__READ__${seq(i)}`, i)),
    ];
    const shape = planQueue("/rw", kids)!;
    const t = table({ [`/rw/_c_${uuid(0)}-__WRIT__${seq(0)}`]: ["0x1001", "0x1002", "0x1003", "0x1004", "0x1005"] });
    expect(herdHazard(shape, t, 5)).toBeNull();
  });

  it("a semaphore's single acquirer on the leases is not a herd", () => {
    const uuid = (n: number) => `3f2a9c4e-1b2d-4c3e-9f8a-${String(n).padStart(12, "0")}`;
    const shape = planCuratorSemaphore(
      "/s",
      [node(`_c_${uuid(0)}-lease-${seq(0)}`, 0)],
      [node(`_c_${uuid(1)}-lock-${seq(0)}`, 1)],
      1,
    )!;
    expect(herdHazard(shape, null, 2)).toBeNull();
  });
});

describe("a herd seen in the server's answers", () => {
  const many = planQueue("/p", seeds(7))!;
  const sessions = Array.from({ length: 7 }, (_, i) => `0x${(0x1000 + i).toString(16)}`);
  const relisting = new Map(sessions.map((s) => [s, "GETC"]));

  it("waiters re-listing the parent (cons lop=GETC) with no data watch: a herd, a warning from the threshold on", () => {
    const t = table({}, sessions, true, { lastOps: relisting, unlistedWatches: 6 });
    const h = zkHazards({ shape: many, table: t, nowMs: T0 });
    expect(h).toHaveLength(1);
    expect(h[0]).toMatchObject({ code: "herd", severity: "warning" });
    expect(h[0]!.message).toContain("last re-listed the parent (cons: lop=GETC)");
    expect(h[0]!.message).toContain("The server holds 6 watches its listings do not show");
  });

  it("below the threshold the same evidence is information, not a warning", () => {
    const few = planQueue("/p", seeds(3))!;
    const t = table({}, sessions.slice(0, 3), true, { lastOps: relisting });
    expect(zkHazards({ shape: few, table: t, nowMs: T0 })).toMatchObject([{ code: "herd", severity: "info" }]);
  });

  it("never judged from an incomplete table", () => {
    const t = table({}, sessions, false, { lastOps: relisting });
    expect(zkHazards({ shape: many, table: t, nowMs: T0 })).toEqual([]);
  });
});

describe("stuckCandidates and the stuck-waiter hazard", () => {
  const shape = planQueue("/p", [node(`Lock${seq(0)}`, 0), node(`Lock${seq(2)}`, 2)])!; // Lock1 left the queue

  it("a waiter whose session is alive and still watches its gone predecessor is a candidate", () => {
    const t = table({ "/p/Lock0000000001": ["0x1002"] }, ["0x1000", "0x1002"]);
    expect([...stuckCandidates(shape, t)]).toEqual([
      ["/p/Lock0000000002", "still watches Lock0000000001, which no longer exists, instead of Lock0000000000"],
    ]);
  });

  it("a waiter whose session is not connected anywhere is not a stuck waiter", () => {
    expect(stuckCandidates(shape, table({ "/p/Lock0000000001": ["0x1002"] }, ["0x1000"])).size).toBe(0);
  });

  it("a waiter with no visible watch is not a candidate: a children watch on the parent cannot be seen", () => {
    const t = table({ "/elsewhere": ["0x1002"] }, ["0x1000", "0x1002"]);
    expect(stuckCandidates(shape, t).size).toBe(0);
    const h = zkHazards({ shape, table: t, nowMs: T0 });
    expect(h).toEqual([
      {
        code: "watch-not-visible",
        severity: "info",
        message:
          "No data watch visible for Lock0000000002; a children watch on the parent (herd) cannot be seen in the server's watch listings.",
      },
    ]);
  });

  it("a waiter that moved on to its new predecessor is fine", () => {
    expect(
      stuckCandidates(shape, table({ "/p/Lock0000000000": ["0x1002"], "/p/Lock0000000001": ["0x1002"] })).size,
    ).toBe(0);
  });

  it("nothing is judged without a complete table, nor for waiters on children", () => {
    expect(stuckCandidates(shape, table({}, [], false)).size).toBe(0);
    expect(stuckCandidates(shape, null).size).toBe(0);
    const herd = planQueue(
      "/k",
      [0, 1].map((i) => node(`lock-${seq(i)}`, i, { data: Buffer.from("lock"), dataLength: 4 })),
    )!;
    expect(stuckCandidates(herd, table({})).size).toBe(0);
  });

  it("is reported only after the grace period", () => {
    const stuck = new Map([
      ["/p/Lock0000000002", { forMs: 500, reason: "watches nothing in this lock: no event will wake it" }],
    ]);
    expect(zkHazards({ shape, table: null, nowMs: T0, stuck })).toEqual([]);
    stuck.get("/p/Lock0000000002")!.forMs = 2500;
    const [h] = zkHazards({ shape, table: null, nowMs: T0, stuck });
    expect(h).toMatchObject({ code: "stuck-waiter", severity: "critical" });
    expect(h!.message).toContain("Lock0000000002 cannot move up");
  });
});
