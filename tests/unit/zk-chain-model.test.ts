import { describe, expect, it } from "vitest";
import { T0, UUID, node, seq } from "./zk-fixtures";
import type { Hazard, Lock } from "../../lib/contract/lock";
import {
  planQueue,
  planSimple,
  toObservedLock,
  type ClientWatchTable,
  type LockShape,
  type NodeSample,
} from "../../agent/sources/zookeeper/queue";
import {
  buildChain,
  compareParents,
  isLongWait,
  matchesFilter,
  queueLength,
} from "../../components/zookeeper/chain-model";

const sess = (i: number) => `0x${(0x1000 + i).toString(16)}`;

/** A watch table as wchp and cons would give it: path -> sessions, and every session's address. */
function table(watches: Record<string, number[]>, sessions: number[]): ClientWatchTable {
  const byPath = new Map(Object.entries(watches).map(([p, s]) => [p, new Set(s.map(sess))]));
  const bySession = new Map<string, Set<string>>();
  for (const [p, set] of byPath) for (const s of set) bySession.set(s, (bySession.get(s) ?? new Set()).add(p));
  return {
    byPath,
    bySession,
    hosts: new Map(sessions.map((i) => [sess(i), `127.0.0.1:${50000 + i}`])),
    complete: true,
    sessionsComplete: true,
  };
}

function lockOf(shape: LockShape, t: ClientWatchTable | null, hazards: Hazard[] = [], maxShown = 1000): Lock {
  const obs = toObservedLock(
    shape,
    t,
    hazards,
    { sourceId: "zookeeper://127.0.0.1:2181", agentId: "a", observedAtMs: T0 },
    { maxShown, longWaitMs: 60_000 },
  );
  return { ...obs, since: obs.observedAt };
}

const seeds = (n: number, opts: Partial<NodeSample> = {}) =>
  planQueue(
    "/app/ParentLock",
    Array.from({ length: n }, (_, i) => node(`Lock${seq(i)}`, i, opts)),
  )!;

describe("buildChain: holder -> waiter -> waiter with who watches whom", () => {
  it("a mutex whose watches were read from the server: each waiter watches the node before it (observed)", () => {
    const t = table({ [`/app/ParentLock/Lock${seq(0)}`]: [1], [`/app/ParentLock/Lock${seq(1)}`]: [2] }, [0, 1, 2]);
    const m = buildChain(lockOf(seeds(3), t))!;
    expect(m.holders.map((h) => [h.node, h.session, h.host, h.watch])).toEqual([
      [`Lock${seq(0)}`, sess(0), "127.0.0.1:50000", null],
    ]);
    expect(m.waiters.map((w) => [w.node, w.position, w.sequence, w.waitsFor, w.watch, w.waitsForPrevious])).toEqual([
      [`Lock${seq(1)}`, 2, 1, `Lock${seq(0)}`, "observed", true],
      [`Lock${seq(2)}`, 3, 2, `Lock${seq(1)}`, "observed", true],
    ]);
    expect(m.holders[0]!.watchers).toEqual([{ session: sess(1), host: "127.0.0.1:50001", observed: true }]);
    expect(m).toMatchObject({
      totalContenders: 3,
      totalWaiters: 2,
      hiddenWaiters: 0,
      watchesObserved: true,
      longWaitMs: 60_000,
      recipe: "seeds-parent-lock",
    });
    expect(m.waiters[0]!.ctimeMs).toBe(T0 + 1000);
  });

  it("without four-letter words every watch is inferred", () => {
    const m = buildChain(lockOf(seeds(3), null))!;
    expect(m.waiters.map((w) => w.watch)).toEqual(["inferred", "inferred"]);
    expect(m.holders[0]!.watchers).toEqual([{ session: sess(1), observed: false }]);
  });

  it("a waiter whose watch the server does not have: 'missing', and flagged stuck once the agent says so", () => {
    const t = table({ [`/app/ParentLock/Lock${seq(0)}`]: [1] }, [0, 1, 2]); // session 2 watches nothing
    const calm = buildChain(lockOf(seeds(3), t))!;
    expect(calm.waiters.map((w) => [w.watch, w.flags])).toEqual([
      ["observed", []],
      ["missing", []],
    ]);
    const stuck: Hazard = { code: "stuck-waiter", severity: "critical", message: "…" };
    const m = buildChain(lockOf(seeds(3), t, [stuck]))!;
    expect(m.waiters[1]!.flags).toEqual(["stuck"]);
  });

  it("zk-lock waiters watch the parent's children (the herd), never listed by wchp", () => {
    const kids = Array.from({ length: 6 }, (_, i) => node(`lock-${seq(i)}`, i, { data: Buffer.from("lock") }));
    const herd: Hazard = { code: "herd", severity: "warning", message: "…" };
    const m = buildChain(lockOf(planQueue("/locks/k", kids)!, null, [herd]))!;
    expect(new Set(m.waiters.map((w) => [w.watch, w.waitsFor, w.waitsForPrevious].join()))).toEqual(
      new Set(["children,/locks/k,false"]),
    );
  });

  it("Curator read/write: readers hold together; a reader behind a writer waits on the first writer, not its neighbour", () => {
    const r = (i: number) => node(`_c_${UUID(i)}-__READ__${seq(i)}`, i);
    const w = (i: number) => node(`_c_${UUID(i)}-__WRIT__${seq(i)}`, i);
    const m = buildChain(lockOf(planQueue("/rw", [r(0), r(1), w(2), w(3), r(4)])!, null))!;
    expect(m.holders.map((h) => h.mode)).toEqual(["read", "read"]);
    expect(m.waiters.map((x) => [x.mode, x.waitsFor, x.waitsForPrevious])).toEqual([
      ["write", `_c_${UUID(1)}-__READ__${seq(1)}`, true],
      ["write", `_c_${UUID(2)}-__WRIT__${seq(2)}`, true],
      ["read", `_c_${UUID(2)}-__WRIT__${seq(2)}`, false],
    ]);
  });

  it("a persistent contender is flagged; a Curator IP in the data is the host when cons has none", () => {
    const kids = [
      node(`_c_${UUID(0)}-lock-${seq(0)}`, 0, { session: "0x0", data: Buffer.from("10.1.2.3") }),
      node(`_c_${UUID(1)}-lock-${seq(1)}`, 1),
    ];
    const m = buildChain(lockOf(planQueue("/c", kids)!, null))!;
    expect(m.holders[0]).toMatchObject({ flags: ["persistent"], host: "10.1.2.3", ephemeral: false });
  });

  it("10,000 contenders: the head is drawn, the queue length counts them all, more can be revealed up to the listed ones", () => {
    const kids = Array.from({ length: 10_000 }, (_, i) => node(`Lock${seq(i)}`, i));
    const lock = lockOf(planQueue("/big", kids)!, null, [], 1000);
    expect(lock.waiters).toHaveLength(1000);
    const m = buildChain(lock, { headSize: 20 })!;
    expect(m.waiters).toHaveLength(20);
    expect(m).toMatchObject({ totalContenders: 10_000, totalWaiters: 9_999, hiddenWaiters: 9_979, moreAvailable: 979 });
    expect(queueLength(lock)).toBe(9_999);
    const more = buildChain(lock, { headSize: 2000 })!;
    expect(more).toMatchObject({ moreAvailable: 0, hiddenWaiters: 9_000 });
  });

  it("a lock that is not ZooKeeper has no chain", () => {
    const redis = { ...lockOf(seeds(1), null), backend: "redis" as const, zookeeper: undefined };
    expect(buildChain(redis)).toBeNull();
  });
});

describe("queueLength", () => {
  it("is the listed waiters for other backends, and counts watching sessions of a single-node lock", () => {
    const other = {
      ...lockOf(seeds(1), null),
      zookeeper: undefined,
      holder: null,
      waiters: [{ owner: "a" }, { owner: "b" }],
    };
    expect(queueLength(other)).toBe(2);
    const simple = planSimple("/product-lock-42", node("product-lock-42", 0));
    const t = table({ "/product-lock-42": [1, 2, 3] }, [0, 1, 2, 3]);
    expect(queueLength(lockOf(simple, t))).toBe(3);
  });

  it("semaphores: every lease holder is a holder, not a waiter", () => {
    const r = (i: number) => node(`_c_${UUID(i)}-__READ__${seq(i)}`, i);
    expect(queueLength(lockOf(planQueue("/rw", [r(0), r(1), r(2)])!, null))).toBe(0);
  });
});

describe("ordering, filtering, long waits", () => {
  it("critical hazards first, then the longest queues, then by path", () => {
    const crit: Hazard = { code: "persistent-contender", severity: "critical", message: "" };
    const a = { ...lockOf(seeds(2), null), resource: "/a" };
    const b = { ...lockOf(seeds(5), null), resource: "/b" };
    const c = { ...lockOf(seeds(1), null, [crit]), resource: "/c" };
    const d = { ...lockOf(seeds(2), null), resource: "/d" };
    expect([a, b, c, d].sort(compareParents).map((l) => l.resource)).toEqual(["/c", "/b", "/a", "/d"]);
  });

  it("filters by path, node, session or host", () => {
    const lock = lockOf(seeds(3), table({}, [0, 1, 2]));
    expect(matchesFilter(lock, "parentlock")).toBe(true);
    expect(matchesFilter(lock, sess(2))).toBe(true);
    expect(matchesFilter(lock, "127.0.0.1:50001")).toBe(true);
    expect(matchesFilter(lock, "nothing-like-it")).toBe(false);
    expect(matchesFilter(lock, "  ")).toBe(true);
  });

  it("a waiter is long once its wait passes the agent's threshold; a holder never is", () => {
    expect(isLongWait({ role: "waiter", ctimeMs: T0 }, T0 + 60_001, 60_000)).toBe(true);
    expect(isLongWait({ role: "waiter", ctimeMs: T0 }, T0 + 59_000, 60_000)).toBe(false);
    expect(isLongWait({ role: "holder", ctimeMs: T0 }, T0 + 600_000, 60_000)).toBe(false);
    expect(isLongWait({ role: "waiter", ctimeMs: T0 }, T0 + 600_000, null)).toBe(false);
  });
});
