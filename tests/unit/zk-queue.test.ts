import { describe, expect, it } from "vitest";
import { HEX, T0, UUID, node, seq } from "./zk-fixtures";
import { lockSchema } from "../../lib/contract/validate";
import {
  buildZkView,
  holderOwner,
  holdingFingerprint,
  planCuratorSemaphore,
  planKazooSemaphore,
  planQueue,
  planSimple,
  toObservedLock,
  type ClientWatchTable,
  type NodeSample,
} from "../../agent/sources/zookeeper/queue";

/** Roles and whom each waits for, in queue order: "holder" or "-> <name>". */
function summary(children: NodeSample[], parent = "/p"): Array<[string, string]> {
  const shape = planQueue(parent, children)!;
  return shape.contenders.map((c) => [c.name, c.role === "holder" ? "holder" : `-> ${c.waitsFor}`]);
}

describe("planQueue: holders and whom each waiter watches", () => {
  it("mutex (seeds): lowest holds, each waits for its predecessor; listing order does not matter", () => {
    const kids = [node("Lock0000000002", 2), node("Lock0000000000", 0), node("Lock0000000001", 1)];
    expect(summary(kids)).toEqual([
      ["Lock0000000000", "holder"],
      ["Lock0000000001", "-> Lock0000000000"],
      ["Lock0000000002", "-> Lock0000000001"],
    ]);
  });

  it("orders by signed sequence after the counter overflowed", () => {
    const kids = [node(`Lock${seq(2147483647)}`, 0), node(`Lock${seq(-2147483648)}`, 1), node(`Lock${seq(-1)}`, 2)];
    expect(summary(kids).map(([n]) => n)).toEqual(["Lock-2147483648", "Lock-000000001", "Lock2147483647"]);
  });

  it("Curator read/write: readers share until the first writer; readers watch the FIRST writer", () => {
    const r = (i: number) => node(`_c_${UUID(i)}-__READ__${seq(i)}`, i);
    const w = (i: number) => node(`_c_${UUID(i)}-__WRIT__${seq(i)}`, i);
    expect(summary([r(0), r(1), w(2), r(3), w(4), r(5)])).toEqual([
      [`_c_${UUID(0)}-__READ__${seq(0)}`, "holder"],
      [`_c_${UUID(1)}-__READ__${seq(1)}`, "holder"],
      [`_c_${UUID(2)}-__WRIT__${seq(2)}`, `-> _c_${UUID(1)}-__READ__${seq(1)}`],
      [`_c_${UUID(3)}-__READ__${seq(3)}`, `-> _c_${UUID(2)}-__WRIT__${seq(2)}`],
      [`_c_${UUID(4)}-__WRIT__${seq(4)}`, `-> _c_${UUID(3)}-__READ__${seq(3)}`],
      [`_c_${UUID(5)}-__READ__${seq(5)}`, `-> _c_${UUID(2)}-__WRIT__${seq(2)}`],
    ]);
  });

  it("kazoo read/write: readers watch the NEAREST writer before them", () => {
    const r = (i: number) => node(`${HEX(i)}__rlock__${seq(i)}`, i);
    const w = (i: number) => node(`${HEX(i)}__lock__${seq(i)}`, i);
    const got = summary([w(0), r(1), w(2), r(3)]);
    expect(got.map(([, v]) => v)).toEqual([
      "holder",
      `-> ${HEX(0)}__lock__${seq(0)}`,
      `-> ${HEX(1)}__rlock__${seq(1)}`,
      `-> ${HEX(2)}__lock__${seq(2)}`,
    ]);
    const shape = planQueue("/p", [w(0), r(1)])!;
    expect(shape.contenders.map((c) => c.mode)).toEqual(["exclusive", "read"]);
  });

  it("a writer holds only when lowest, even when readers come after it", () => {
    const got = summary([node(`write-${seq(0)}`, 0), node(`read-${seq(1)}`, 1), node(`read-${seq(2)}`, 2)]);
    expect(got.map(([, v]) => v)).toEqual(["holder", `-> write-${seq(0)}`, `-> write-${seq(0)}`]);
  });

  it("zk-lock: every waiter watches the parent's children (the herd)", () => {
    const lock = (i: number) => node(`lock-${seq(i)}`, i, { data: Buffer.from("lock"), dataLength: 4 });
    const shape = planQueue("/locks/orders", [lock(0), lock(1), lock(2)])!;
    expect(shape.recipe).toBe("npm-zk-lock");
    expect(shape.contenders.slice(1).every((c) => c.waitsOnChildren && c.waitsFor === "/locks/orders")).toBe(true);
  });

  it("mixed recipes stay in one queue; the most common names the parent", () => {
    const shape = planQueue("/p", [node(`Lock${seq(0)}`, 0), node(`Lock${seq(1)}`, 1), node(`member_${seq(2)}`, 2)])!;
    expect(shape.recipe).toBe("seeds-parent-lock");
    expect(shape.recipes.sort()).toEqual(["generic-sequential", "seeds-parent-lock"]);
  });

  it("non-sequential children are not contenders; none at all means no lock", () => {
    expect(planQueue("/p", [node("config", 0)])).toBeNull();
    expect(planQueue("/p", [])).toBeNull();
    expect(planQueue("/p", [node("config", 0), node(`Lock${seq(3)}`, 1)])!.contenders).toHaveLength(1);
  });
});

describe("semaphores", () => {
  const lease = (i: number) => node(`_c_${UUID(i)}-lease-${seq(i)}`, i);
  const lk = (i: number) => node(`_c_${UUID(i)}-lock-${seq(i)}`, 10 + i);

  it("Curator v2: unknown max leases counts every lease as held; the locks queue waits", () => {
    const shape = planCuratorSemaphore("/sem", [lease(1), lease(0)], [lk(0), lk(1)], null)!;
    expect(shape.contenders.map((c) => [c.name, c.role, c.mode, c.waitsFor])).toEqual([
      [`leases/_c_${UUID(0)}-lease-${seq(0)}`, "holder", "lease", null],
      [`leases/_c_${UUID(1)}-lease-${seq(1)}`, "holder", "lease", null],
      [`locks/_c_${UUID(0)}-lock-${seq(0)}`, "waiter", "exclusive", "/sem/leases"],
      [`locks/_c_${UUID(1)}-lock-${seq(1)}`, "waiter", "exclusive", `locks/_c_${UUID(0)}-lock-${seq(0)}`],
    ]);
  });

  it("Curator v2 with known max leases: the lowest k hold", () => {
    const shape = planCuratorSemaphore("/sem", [lease(0), lease(1), lease(2)], [], 2)!;
    expect(shape.contenders.map((c) => c.role)).toEqual(["holder", "holder", "waiter"]);
  });

  it("kazoo: <32hex> holders by ctime, queue in <path>-__lock__", () => {
    const holders = [node(HEX(2), 5), node(HEX(1), 3)];
    const queue = [node(`${HEX(9)}__lock__${seq(1)}`, 9), node(`${HEX(8)}__lock__${seq(0)}`, 8)];
    const shape = planKazooSemaphore("/pool", holders, queue, 2)!;
    expect(shape.contenders.map((c) => [c.name, c.role, c.waitsFor])).toEqual([
      [HEX(1), "holder", null],
      [HEX(2), "holder", null],
      [`pool-__lock__/${HEX(8)}__lock__${seq(0)}`, "waiter", "/pool"],
      [`pool-__lock__/${HEX(9)}__lock__${seq(1)}`, "waiter", `pool-__lock__/${HEX(8)}__lock__${seq(0)}`],
    ]);
    expect(shape.maxLeases).toBe(2);
    expect(planKazooSemaphore("/pool", [], [], 2)).toBeNull();
  });
});

const table = (
  byPath: Record<string, string[]>,
  hosts: Record<string, string> = {},
  complete = true,
): ClientWatchTable => {
  const bySession = new Map<string, Set<string>>();
  for (const [p, ss] of Object.entries(byPath))
    for (const s of ss) bySession.set(s, (bySession.get(s) ?? new Set()).add(p));
  return {
    byPath: new Map(Object.entries(byPath).map(([k, v]) => [k, new Set(v)])),
    bySession,
    hosts: new Map(Object.entries(hosts)),
    complete,
    sessionsComplete: complete,
  };
};

describe("buildZkView: observed or inferred watches", () => {
  const kids = [node(`Lock${seq(0)}`, 0), node(`Lock${seq(1)}`, 1), node(`Lock${seq(2)}`, 2)];

  it("inferred: each waiter is listed as a watcher of its predecessor", () => {
    const view = buildZkView(planQueue("/p", kids)!, null);
    expect(view.watchesObserved).toBe(false);
    expect(view.contenders.map((c) => c.watchedBy)).toEqual([
      [{ session: "0x1001", observed: false }],
      [{ session: "0x1002", observed: false }],
      [],
    ]);
  });

  it("observed: exactly what the server lists, with client addresses", () => {
    const t = table({ "/p/Lock0000000000": ["0x1001", "0x9999"] }, { "0x1001": "127.0.0.1:5000" });
    const view = buildZkView(planQueue("/p", kids)!, t);
    expect(view.watchesObserved).toBe(true);
    expect(view.contenders[0]!.watchedBy).toEqual([
      { session: "0x1001", observed: true, host: "127.0.0.1:5000" },
      { session: "0x9999", observed: true },
    ]);
    expect(view.contenders[1]!.watchedBy).toEqual([]);
  });

  it("an incomplete table (one server refused) falls back to inference", () => {
    const view = buildZkView(planQueue("/p", kids)!, table({ "/p/Lock0000000000": ["0x1001"] }, {}, false));
    expect(view.watchesObserved).toBe(false);
    expect(view.contenders[0]!.watchedBy).toEqual([{ session: "0x1001", observed: false }]);
  });
});

describe("toObservedLock", () => {
  const ctx = { sourceId: "zookeeper://127.0.0.1:2181", agentId: "a1", observedAtMs: T0 + 60_000 };

  it("builds a contract Lock that passes the dashboard's validation", () => {
    const kids = [
      node(`_c_${UUID(0)}-lock-${seq(0)}`, 0, { data: Buffer.from("10.1.2.3"), dataLength: 8 }),
      node(`_c_${UUID(1)}-lock-${seq(1)}`, 1, { data: Buffer.from("10.1.2.4"), dataLength: 8 }),
    ];
    const lock = toObservedLock(planQueue("/locks/job", kids)!, null, [], ctx);
    expect(lock).toMatchObject({
      backend: "zookeeper",
      resource: "/locks/job",
      owner: `_c_${UUID(0)}-lock-${seq(0)}`,
      library: "curator",
      ttlMs: null,
      kind: "ephemeral-sequential",
      valuePreview: "10.1.2.3",
      holder: { session: "0x1000", host: "10.1.2.3", sequence: 0, clientId: UUID(0), contenders: 2 },
      waiters: [{ owner: `_c_${UUID(1)}-lock-${seq(1)}`, since: new Date(T0 + 1000).toISOString() }],
    });
    expect(lockSchema.safeParse({ ...lock, since: lock.observedAt }).success).toBe(true);
  });

  it("escapes hostile names and data and bounds them", () => {
    const evil = `\u202e<img src=x>${"x".repeat(5000)}-lock-${seq(0)}`;
    const kids = [
      node(evil, 0, { data: Buffer.from([0, 1, 0xff, 0x1b, ...Buffer.from("A".repeat(5000))]), dataLength: 5004 }),
    ];
    const lock = toObservedLock(planQueue("/p\u0007", kids)!, null, [], ctx);
    expect(lock.owner!.startsWith("\\u{202e}<img")).toBe(true);
    expect(lock.owner!.length).toBeLessThan(400);
    expect(lock.valuePreview!.startsWith("\\x00\\x01\\xff\\x1b")).toBe(true);
    expect(lock.valuePreview).toMatch(/…\(\+\d+ bytes\)$/);
    expect(lockSchema.safeParse({ ...lock, since: lock.observedAt }).success).toBe(true);
  });

  it("caps the contenders and waiters listed; the total stays in holder.contenders", () => {
    const kids = Array.from({ length: 10_000 }, (_, i) => node(`Lock${seq(i)}`, i));
    const lock = toObservedLock(planQueue("/big", kids)!, null, [], ctx, { maxShown: 1000 });
    expect(lock.zookeeper!.contenders).toHaveLength(1000);
    expect(lock.waiters).toHaveLength(1000);
    expect(lock.holder!.contenders).toBe(10_000);
    expect(lockSchema.safeParse({ ...lock, since: lock.observedAt }).success).toBe(true);
  });

  it("WriteLock: the session in the name is shown as hex; kazoo: the identifier", () => {
    const wl = toObservedLock(planQueue("/w", [node(`x-72057594037927936-${seq(0)}`, 0)])!, null, [], ctx);
    expect(wl.holder!.nameSession).toBe("0x100000000000000");
    const kz = toObservedLock(
      planQueue("/k", [node(`${HEX(1)}__lock__${seq(0)}`, 0, { data: Buffer.from("worker-7"), dataLength: 8 })])!,
      null,
      [],
      ctx,
    );
    expect(kz.holder).toMatchObject({ identifier: "worker-7", clientId: HEX(1) });
  });

  it("a single-node lock lists the sessions watching it as waiters when observed", () => {
    const shape = planSimple("/product-lock-42", node("product-lock-42", 0));
    const lock = toObservedLock(shape, table({ "/product-lock-42": ["0xaa", "0xbb"] }), [], ctx);
    expect(lock.owner).toBe("product-lock-42");
    expect(lock.kind).toBe("ephemeral");
    expect(lock.waiters.map((w) => w.owner)).toEqual(["0xaa", "0xbb"]);
  });

  it("a persistent holder is flagged in holder details", () => {
    const lock = toObservedLock(planQueue("/p", [node(`Lock${seq(0)}`, 0, { session: "0x0" })])!, null, [], ctx);
    expect(lock.holder!.ephemeral).toBe(false);
    expect(lock.zookeeper!.contenders[0]!.ephemeral).toBe(false);
  });
});

describe("single-node locks: who holds", () => {
  const shape = (data: Buffer | null, extra: Partial<NodeSample> = {}) =>
    planSimple("/product-lock-42", node("product-lock-42", 7, { data, dataLength: data?.length ?? 0, ...extra }));

  it("the holder's name written as the node's data is the owner; otherwise the node's name", () => {
    const cases: Array<[Buffer | null, string]> = [
      [Buffer.from("driver-7"), "driver-7"],
      [null, "product-lock-42"],
      [Buffer.from([0x00, 0xff, 0x10]), "product-lock-42"],
      [Buffer.from("line1\nline2"), "product-lock-42"],
      [Buffer.from("   "), "product-lock-42"],
    ];
    for (const [data, want] of cases) {
      const s = shape(data);
      expect(holderOwner(s, s.contenders[0]!)).toBe(want);
    }
  });

  it("the holding's fingerprint changes with the node's creation and session, not with its name", () => {
    const a = shape(null, { czxid: "0x10" }).contenders[0]!;
    const again = shape(null, { czxid: "0x10" }).contenders[0]!;
    const recreated = shape(null, { czxid: "0x11" }).contenders[0]!;
    expect(holdingFingerprint(a)).toMatch(/^sha1:[0-9a-f]{40}$/);
    expect(holdingFingerprint(again)).toBe(holdingFingerprint(a));
    expect(holdingFingerprint(recreated)).not.toBe(holdingFingerprint(a));
    expect(holdingFingerprint({ ...a, session: "0x999" })).not.toBe(holdingFingerprint(a));
    expect(holdingFingerprint({ ...a, czxid: undefined })).toBeUndefined();
  });
});
