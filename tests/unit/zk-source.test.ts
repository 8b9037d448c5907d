import { describe, expect, it } from "vitest";
import { parseAgentUpdate } from "../../lib/contract/validate";
import type { FourLetterWord } from "../../agent/sources/zookeeper/four-letter-words";
import { ZookeeperSource, type ZookeeperSourceOptions } from "../../agent/sources/zookeeper/zookeeper-source";
import type { ZkServerAddress } from "../../agent/sources/zookeeper/zk-config";
import type {
  FourLetterWordPort,
  ZkConnectionState,
  ZkDeleteResult,
  ZkPort,
  ZkPortListener,
  ZkStat,
} from "../../agent/sources/zookeeper/zk-port";

const T0 = Date.parse("2026-01-01T00:00:00Z");

interface FakeNode {
  data: Buffer | null;
  owner: string;
  ctimeMs: number;
  czxid: number;
  version: number;
}

/** An in-memory ZooKeeper behind the port: one-shot watches, NoNode as null, calls counted and overlapping. */
class FakeZk implements ZkPort {
  nodes = new Map<string, FakeNode>([["/", { data: null, owner: "0x0", ctimeMs: T0, czxid: 0, version: 0 }]]);
  private zxid = 1;
  private childWatches = new Set<string>();
  private existsWatches = new Set<string>();
  private listener: ZkPortListener | null = null;
  private st: ZkConnectionState = "connected";
  private sess = "0xa0";
  calls: Array<{ op: string; path: string; watch: boolean }> = [];
  inFlight = 0;
  maxInFlight = 0;
  failNext: string | null = null;

  setListener(l: ZkPortListener) {
    this.listener = l;
  }
  state() {
    return this.st;
  }
  session() {
    return this.st === "connected" ? this.sess : null;
  }
  setState(st: ZkConnectionState, session?: string) {
    this.st = st;
    if (session) this.sess = session;
    if (st !== "connected") {
      this.childWatches.clear();
      this.existsWatches.clear();
    }
    this.listener?.onState(st, this.session());
  }

  create(path: string, opts: { data?: string | Buffer; owner?: string; ctimeMs?: number } = {}) {
    const parent = path.slice(0, path.lastIndexOf("/")) || "/";
    if (!this.nodes.has(parent)) this.create(parent);
    const data = opts.data === undefined ? null : Buffer.isBuffer(opts.data) ? opts.data : Buffer.from(opts.data);
    this.nodes.set(path, {
      data,
      owner: opts.owner ?? "0x0",
      ctimeMs: opts.ctimeMs ?? T0,
      czxid: this.zxid++,
      version: 0,
    });
    this.fire(parent, "child");
    this.fire(path, "exists");
  }
  remove(path: string) {
    this.nodes.delete(path);
    this.fire(path.slice(0, path.lastIndexOf("/")) || "/", "child");
    this.fire(path, "exists");
    this.fire(path, "child");
  }
  private fire(path: string, kind: "child" | "exists") {
    const set = kind === "child" ? this.childWatches : this.existsWatches;
    if (set.delete(path)) this.listener?.onWatch(path);
  }
  watchedDirs() {
    return [...this.childWatches].sort();
  }
  private children(path: string): string[] {
    const prefix = path === "/" ? "/" : `${path}/`;
    const out: string[] = [];
    for (const p of this.nodes.keys())
      if (p !== path && p.startsWith(prefix) && !p.slice(prefix.length).includes("/")) out.push(p.slice(prefix.length));
    return out;
  }
  private stat(path: string): ZkStat {
    const n = this.nodes.get(path)!;
    return {
      czxid: `0x${n.czxid.toString(16)}`,
      ctimeMs: n.ctimeMs,
      ephemeralOwner: n.owner,
      version: n.version,
      dataLength: n.data?.length ?? 0,
      numChildren: this.children(path).length,
    };
  }
  private async op<T>(op: string, path: string, watch: boolean, fn: () => T): Promise<T> {
    this.calls.push({ op, path, watch });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise((r) => setImmediate(r));
    this.inFlight--;
    if (this.st !== "connected") throw new Error("connection loss");
    if (this.failNext && path.startsWith(this.failNext)) {
      this.failNext = null;
      throw new Error("injected failure");
    }
    const result = fn();
    this.afterCall?.(op, path);
    return result;
  }
  /** Runs right after a call was answered (its watch armed): a test's chance to change the tree mid-read. */
  afterCall: ((op: string, path: string) => void) | null = null;
  getChildren(path: string, watch: boolean) {
    return this.op("getChildren", path, watch, () => {
      if (!this.nodes.has(path)) return null;
      if (watch) this.childWatches.add(path);
      return { children: this.children(path), stat: this.stat(path) };
    });
  }
  getData(path: string, maxBytes: number) {
    return this.op("getData", path, false, () => {
      const n = this.nodes.get(path);
      return n ? { data: n.data ? n.data.subarray(0, maxBytes) : null, stat: this.stat(path) } : null;
    });
  }
  exists(path: string, watch: boolean) {
    return this.op("exists", path, watch, () => {
      if (watch) this.existsWatches.add(path);
      return this.nodes.has(path) ? this.stat(path) : null;
    });
  }
  deletes: Array<{ path: string; version: number }> = [];
  /** Runs just before a delete reaches the fake server: a test's chance to change the node in between. */
  beforeDelete: (() => void) | null = null;
  delete(path: string, version: number) {
    return this.op("delete", path, false, (): ZkDeleteResult => {
      this.beforeDelete?.();
      this.deletes.push({ path, version });
      const n = this.nodes.get(path);
      if (!n) return "no-node";
      if (n.version !== version) return "bad-version";
      if (this.children(path).length > 0) return "not-empty";
      this.remove(path);
      return "deleted";
    });
  }
  async close() {}
}

class Fake4lw implements FourLetterWordPort {
  answers: Partial<Record<FourLetterWord, string>> = {};
  asked: string[] = [];
  async send(server: ZkServerAddress, cmd: FourLetterWord) {
    this.asked.push(cmd);
    const text = this.answers[cmd];
    if (text === undefined) throw new Error("connection refused");
    return { text, truncated: false };
  }
}

const REFUSED = (cmd: string) => `${cmd} is not executed because it is not in the whitelist.\n`;

function setup(over: Partial<ZookeeperSourceOptions> = {}) {
  const zk = new FakeZk();
  const fl = new Fake4lw();
  fl.answers = { wchp: REFUSED("wchp"), wchc: REFUSED("wchc"), cons: REFUSED("cons") };
  let now = T0 + 1000; // nodes are created at T0 unless a test says otherwise
  const changes: number[] = [];
  let id = 0;
  const source = new ZookeeperSource(zk, fl, {
    sourceId: "zookeeper://127.0.0.1:2181",
    agentId: "agent-1",
    newId: () => `event-${++id}`,
    log: () => undefined,
    chroot: "",
    servers: [{ host: "127.0.0.1", port: 2181 }],
    lockPaths: [],
    discoveryMaxDepth: 4,
    discoveryMaxNodes: 5000,
    resyncMs: 30_000,
    fourLetterMinIntervalMs: 0,
    onChange: () => changes.push(now),
    now: () => now,
    ...over,
  });
  zk.setState("connected");
  return { zk, fl, source, changes, advance: (ms: number) => (now += ms) };
}

const seq = (n: number) => String(n).padStart(10, "0");

describe("ZookeeperSource over a fake port", () => {
  it("discovers lock parents of every shape without walking into them", async () => {
    const { zk, source } = setup();
    const uuid = "3f2a9c4e-1b2d-4c3e-9f8a-0123456789ab";
    const hex = "0123456789abcdef0123456789abcdef";
    zk.create(`/ParentLock/Lock${seq(0)}`, { owner: "0x1" });
    zk.create(`/ParentLock/Lock${seq(1)}`, { owner: "0x2" });
    zk.create(`/curator/jobs/_c_${uuid}-lock-${seq(0)}`, { owner: "0x3", data: "10.0.0.1" });
    zk.create(`/curator/sem/leases/_c_${uuid}-lease-${seq(0)}`, { owner: "0x4" });
    zk.create(`/curator/sem/locks/_c_${uuid}-lock-${seq(0)}`, { owner: "0x5" });
    zk.create(`/kazoo/pool`, { data: "2" });
    zk.create(`/kazoo/pool/${hex}`, { owner: "0x6" });
    zk.create(`/kazoo/pool-__lock__/${hex}__lock__${seq(0)}`, { owner: "0x7" });
    zk.create(`/product-lock-42`, { owner: "0x8" });
    zk.create(`/config/changes/change_${seq(0)}`); // persistent sequential: a change log, not a lock
    zk.create(`/zookeeper/quota`);
    const out = await source.poll();
    const byResource = Object.fromEntries(
      source.locks().map((l) => [l.resource, [l.library, l.zookeeper?.recipe, l.owner]]),
    );
    expect(byResource).toEqual({
      "/ParentLock": ["seeds", "seeds-parent-lock", `Lock${seq(0)}`],
      "/curator/jobs": ["curator", "curator-mutex", `_c_${uuid}-lock-${seq(0)}`],
      "/curator/sem": ["curator", "curator-semaphore-v2", `leases/_c_${uuid}-lease-${seq(0)}`],
      "/kazoo/pool": ["kazoo", "kazoo-semaphore", hex],
      "/product-lock-42": ["generic", "simple-ephemeral", "product-lock-42"],
    });
    expect(out.events.map((e) => e.type)).toEqual(["acquired", "acquired", "acquired", "acquired", "acquired"]);
    expect(zk.calls.some((c) => c.path.startsWith("/zookeeper/"))).toBe(false);
    // No listing below a lock parent, and no watch on any contender.
    expect(zk.calls.filter((c) => c.op === "getChildren" && c.path.startsWith("/ParentLock/"))).toEqual([]);
    expect(zk.calls.filter((c) => c.watch && c.op === "getChildren").every((c) => !/\d{10}$/.test(c.path))).toBe(true);
  });

  it("seeds' simple lock: a node gone and back between two reads is a new holding, shown by the name in its data", async () => {
    const { zk, source } = setup({ lockPaths: ["/product-lock-42"] });
    zk.create("/product-lock-42", { owner: "0x8", data: "driver-7" });
    const first = await source.poll();
    expect(first.events.map((e) => [e.type, e.owner])).toEqual([["acquired", "driver-7"]]);
    // driver-7's process dies; its waiter re-creates the node before the next read: same name, new czxid/session
    zk.remove("/product-lock-42");
    zk.create("/product-lock-42", { owner: "0x9", data: "driver-9" });
    const second = await source.poll();
    expect(second.events.map((e) => [e.type, e.owner, e.previousOwner])).toEqual([
      ["owner-changed", "driver-9", "driver-7"],
    ]);
    // the same driver again, in a new session: still a new holding, though the owner text is the same
    zk.remove("/product-lock-42");
    zk.create("/product-lock-42", { owner: "0xa", data: "driver-9" });
    const third = await source.poll();
    expect(third.events.map((e) => [e.type, e.owner])).toEqual([["owner-changed", "driver-9"]]);
    expect(source.locks()[0]!.holder).toMatchObject({ session: "0xa" });
    // a plain re-read of the same node is no change
    expect((await source.poll()).events).toEqual([]);
  });

  it("bounds discovery by depth and by nodes listed, and never releases what it could not reach", async () => {
    const deep = setup({ discoveryMaxDepth: 2 });
    deep.zk.create(`/a/b/c/d/Lock${seq(0)}`, { owner: "0x1" });
    await deep.source.poll();
    expect(deep.source.locks()).toEqual([]);

    const small = setup({ discoveryMaxNodes: 3 });
    for (let i = 0; i < 50; i++) small.zk.create(`/dir${i}/x`);
    await small.source.poll();
    expect(small.zk.calls.filter((c) => c.op === "getChildren").length).toBeLessThanOrEqual(3);
  });

  it("a parent with 10,000 contenders: one listing, data in bounded batches, then only what is new", async () => {
    const { zk, source } = setup({ lockPaths: ["/big"], readConcurrency: 64 });
    for (let i = 0; i < 10_000; i++)
      zk.create(`/big/Lock${seq(i)}`, { owner: `0x${(i + 1).toString(16)}`, ctimeMs: T0 + i });
    const first = await source.poll();
    expect(first.events.map((e) => e.type)).toEqual(["acquired"]);
    const lock = source.locks()[0]!;
    expect(lock.holder!.contenders).toBe(10_000);
    expect(lock.waiters).toHaveLength(1000);
    expect(zk.calls.filter((c) => c.op === "getData")).toHaveLength(10_000);
    expect(zk.maxInFlight).toBeLessThanOrEqual(64);
    expect(zk.watchedDirs()).toEqual(["/big"]);

    zk.calls = [];
    zk.remove(`/big/Lock${seq(0)}`);
    const second = await source.poll();
    expect(second.events.map((e) => [e.type, e.owner, e.detail?.via])).toEqual([
      ["owner-changed", `Lock${seq(1)}`, "watch"],
    ]);
    expect(zk.calls.map((c) => c.op)).toEqual(["getChildren"]); // the other 9,999 come from the cache
  }, 30_000); // CPU-bound on 10,000 nodes: generous on a loaded 2-core machine

  it("a fired watch calls onChange once until the next poll, and the re-read re-arms it", async () => {
    const { zk, source, changes } = setup({ lockPaths: ["/ParentLock"] });
    zk.create(`/ParentLock/Lock${seq(0)}`, { owner: "0x1" });
    await source.poll();
    zk.create(`/ParentLock/Lock${seq(1)}`, { owner: "0x2" });
    zk.create(`/ParentLock/Lock${seq(2)}`, { owner: "0x3" });
    expect(changes).toHaveLength(1); // the watch is one-shot: the second create fires nothing
    await source.poll();
    expect(source.locks()[0]!.waiters).toHaveLength(2);
    zk.remove(`/ParentLock/Lock${seq(2)}`);
    expect(changes).toHaveLength(2);
  });

  it("holder gone: owner-changed with why (cons says its session is gone) and the waiters that left", async () => {
    const { zk, fl, source } = setup({ lockPaths: ["/p"] });
    fl.answers = {
      wchp: "\n",
      cons: " /127.0.0.1:1[1](sid=0x1)\n /127.0.0.1:2[1](sid=0x2)\n /127.0.0.1:3[1](sid=0x3)\n\n",
    };
    zk.create(`/p/Lock${seq(0)}`, { owner: "0x1" });
    zk.create(`/p/Lock${seq(1)}`, { owner: "0x2" });
    zk.create(`/p/Lock${seq(2)}`, { owner: "0x3" });
    await source.poll();
    fl.answers.cons = " /127.0.0.1:3[1](sid=0x3)\n\n"; // 0x1 closed its session; 0x2 gave up and left too
    zk.remove(`/p/Lock${seq(0)}`);
    zk.remove(`/p/Lock${seq(1)}`);
    const out = await source.poll();
    expect(out.events).toHaveLength(1);
    expect(out.events[0]).toMatchObject({
      type: "owner-changed",
      owner: `Lock${seq(2)}`,
      previousOwner: `Lock${seq(0)}`,
      detail: { via: "watch", reason: "session-gone", previousSession: "0x1", newSession: "0x3", waiterLeft: 1 },
    });
    zk.remove(`/p/Lock${seq(2)}`);
    fl.answers.cons = " /127.0.0.1:3[1](sid=0x3)\n\n"; // deleted by a live client: a release
    const released = await source.poll();
    expect(released.events.map((e) => [e.type, e.detail?.reason])).toEqual([["released", "node-deleted"]]);
    expect(released.removed).toHaveLength(1);
  });

  it("disconnected: source down, nothing released; back: a full resync reports what changed meanwhile", async () => {
    const { zk, source } = setup({ lockPaths: ["/p"] });
    zk.create(`/p/Lock${seq(0)}`, { owner: "0x1" });
    await source.poll();
    zk.setState("disconnected");
    zk.remove(`/p/Lock${seq(0)}`);
    for (let i = 0; i < 3; i++) expect(await source.poll()).toEqual({ events: [], upserts: [], removed: [] });
    expect(source.status()).toMatchObject({ up: false, error: expect.stringContaining("disconnected") });
    expect(source.locks()).toHaveLength(1);
    zk.setState("connected");
    const back = await source.poll();
    expect(back.events.map((e) => [e.type, e.detail?.via])).toEqual([["released", "resync"]]);
    expect(source.status().up).toBe(true);
  });

  it("a failed read marks the source down and changes nothing; the parent is read again next time", async () => {
    const { zk, source } = setup({ lockPaths: ["/p"] });
    zk.create(`/p/Lock${seq(0)}`, { owner: "0x1" });
    await source.poll();
    zk.remove(`/p/Lock${seq(0)}`);
    zk.failNext = "/p";
    expect((await source.poll()).events).toEqual([]);
    expect(source.status()).toMatchObject({ up: false, error: expect.stringContaining("injected failure") });
    expect(source.locks()).toHaveLength(1);
    expect((await source.poll()).events.map((e) => e.type)).toEqual(["released"]);
  });

  it("the agent's session expired: new session, every watch re-armed, full resync", async () => {
    const { zk, source } = setup({ lockPaths: ["/a", "/b"] });
    zk.create(`/a/Lock${seq(0)}`, { owner: "0x1" });
    zk.create(`/b/Lock${seq(0)}`, { owner: "0x2" });
    await source.poll();
    zk.setState("expired");
    zk.create(`/a/Lock${seq(1)}`, { owner: "0x3" }); // no watch alive to report it
    zk.setState("connected", "0xb0");
    zk.calls = [];
    await source.poll();
    expect(zk.watchedDirs()).toEqual(["/a", "/b"]);
    expect(source.locks().find((l) => l.resource === "/a")!.waiters).toHaveLength(1);
  });

  it("a configured path that does not exist yet is watched for creation", async () => {
    const { zk, source, changes } = setup({ lockPaths: ["/later"] });
    expect((await source.poll()).events).toEqual([]);
    expect(zk.calls.some((c) => c.op === "exists" && c.path === "/later" && c.watch)).toBe(true);
    zk.create("/later");
    expect(changes).toHaveLength(1);
    zk.create(`/later/Lock${seq(0)}`, { owner: "0x1" });
    await source.poll();
    await source.poll();
    expect(source.locks().map((l) => l.owner)).toEqual([`Lock${seq(0)}`]);
  });

  it("four-letter words refused: watches inferred, and the server is not asked again until the resync", async () => {
    const { zk, fl, source, advance } = setup({ lockPaths: ["/p"] });
    zk.create(`/p/Lock${seq(0)}`, { owner: "0x1" });
    zk.create(`/p/Lock${seq(1)}`, { owner: "0x2" });
    await source.poll();
    const view = source.locks()[0]!.zookeeper!;
    expect(view.watchesObserved).toBe(false);
    expect(view.contenders[0]!.watchedBy).toEqual([{ session: "0x2", observed: false }]);
    expect(fl.asked.sort()).toEqual(["cons", "wchc", "wchp"]);
    fl.asked = [];
    await source.poll();
    expect(fl.asked).toEqual([]);
    advance(30_000);
    await source.poll();
    expect(fl.asked).toContain("wchp");
  });

  it("observed watches: a waiter stuck on its gone predecessor is reported after the grace period", async () => {
    const { zk, fl, source, advance } = setup({ lockPaths: ["/p"], thresholds: { stuckGraceMs: 1000 } });
    fl.answers = {
      wchp: `/p/Lock${seq(1)}\n\t0x3\n\n`,
      cons: " /127.0.0.1:1[1](sid=0x1)\n /127.0.0.1:3[1](sid=0x3)\n\n",
    };
    zk.create(`/p/Lock${seq(0)}`, { owner: "0x1" });
    zk.create(`/p/Lock${seq(2)}`, { owner: "0x3" });
    await source.poll();
    expect(source.locks()[0]!.hazards).toEqual([]);
    advance(1500);
    await source.poll();
    const h = source.locks()[0]!.hazards;
    expect(h.map((x) => x.code)).toEqual(["stuck-waiter"]);
    expect(h[0]!.message).toContain(`still watches Lock${seq(1)}, which no longer exists`);
    expect(source.locks()[0]!.zookeeper!.watchesObserved).toBe(true);
  });

  it("a new lock parent next to known ones is found through the directory's watch, before any resync", async () => {
    const { zk, source, changes } = setup({ lockPaths: ["/locks"] });
    zk.create(`/locks/a/lock-${seq(0)}`, { owner: "0x1", data: "lock" });
    await source.poll();
    expect(source.locks().map((l) => l.resource)).toEqual(["/locks/a"]);
    zk.create(`/locks/b/lock-${seq(0)}`, { owner: "0x2", data: "lock" });
    expect(changes).toHaveLength(1);
    const out = await source.poll();
    expect(out.events.map((e) => [e.type, e.resource])).toEqual([["acquired", "/locks/b"]]);
    expect(source.locks().find((l) => l.resource === "/locks/b")!.library).toBe("zk-lock");
  });

  it("explicit lock parents never make the agent watch above them", async () => {
    const { zk, source } = setup({ lockPaths: ["/app/ParentLock"] });
    zk.create(`/app/ParentLock/Lock${seq(0)}`, { owner: "0x1" });
    zk.create(`/app/other/Lock${seq(0)}`, { owner: "0x2" });
    await source.poll();
    expect(zk.watchedDirs()).toEqual(["/app/ParentLock"]);
    expect(source.locks().map((l) => l.resource)).toEqual(["/app/ParentLock"]);
  });

  it("empty lock parents piling up: on the live locks beside them and at source level", async () => {
    const { zk, source } = setup({ thresholds: { emptyParentsMin: 100 } });
    for (let i = 0; i < 120; i++) zk.create(`/locks/key-${i}`);
    zk.create(`/locks/live/lock-${seq(0)}`, { owner: "0x1", data: "lock" });
    await source.poll();
    expect(source.locks()[0]!.hazards.map((h) => h.code)).toEqual(["empty-lock-parents"]);
    expect(source.sourceHazards()).toEqual([
      expect.objectContaining({
        code: "empty-lock-parents",
        message: expect.stringContaining("120 empty lock parents under /locks"),
      }),
    ]);
    expect(source.status().hazards).toEqual(source.sourceHazards());
    // What the agent sends passes the dashboard's validation with the source hazards and the view's new fields kept.
    const parsed = parseAgentUpdate({
      agentId: "agent-1",
      at: new Date(T0).toISOString(),
      sources: [source.status()],
      upserts: source.locks(),
      removed: [],
      events: [],
    });
    expect(parsed.ok && parsed.value.sources[0]!.hazards?.map((h) => h.code)).toEqual(["empty-lock-parents"]);
    expect(parsed.ok && parsed.value.upserts[0]!.zookeeper?.longWaitMs).toBe(60_000);
  });

  it("a directory named 'locks' is not a Curator semaphore: a mutex at <app>/locks is found as a mutex", async () => {
    const { zk, source } = setup();
    const uuid = "3f2a9c4e-1b2d-4c3e-9f8a-0123456789ab";
    zk.create(`/app/locks/_c_${uuid}-lock-${seq(0)}`, { owner: "0x1", data: "10.0.0.1" });
    await source.poll();
    expect(source.locks().map((l) => [l.resource, l.zookeeper!.recipe])).toEqual([["/app/locks", "curator-mutex"]]);
  });

  it("a contender queued while its parent is being read is not lost until the next resync", async () => {
    const { zk, source, changes } = setup({ lockPaths: ["/p"] });
    await source.poll(); // /p does not exist yet: an exists watch waits for it
    zk.create("/p");
    let queued = false;
    zk.afterCall = (op, path) => {
      // The re-read of /p has armed its child watch and goes on reading: a client queues right then.
      if (op === "getChildren" && path === "/p" && !queued) {
        queued = true;
        zk.create(`/p/Lock${seq(0)}`, { owner: "0x1" });
      }
    };
    await source.poll();
    expect(queued).toBe(true);
    expect(changes.length).toBeGreaterThanOrEqual(2);
    await source.poll();
    expect(source.locks().map((l) => l.owner)).toEqual([`Lock${seq(0)}`]);
  });

  it("polls asked for concurrently run one after the other, each event reported once", async () => {
    const { zk, source } = setup({ lockPaths: ["/p"] });
    zk.create(`/p/Lock${seq(0)}`, { owner: "0x1" });
    const [a, b] = await Promise.all([source.poll(), source.poll()]);
    expect([...a.events, ...b.events].map((e) => e.type)).toEqual(["acquired"]);
  });
});

describe("ZookeeperSource force-release over a fake port", () => {
  async function threeInQueue() {
    const env = setup({ lockPaths: ["/p"] });
    for (let i = 0; i < 3; i++) env.zk.create(`/p/Lock${seq(i)}`, { owner: `0x${i + 1}`, ctimeMs: T0 + i });
    await env.source.poll();
    const lock = env.source.locks()[0]!;
    const release = (over: Partial<{ expectedOwner: string; dryRun: boolean }> = {}) =>
      env.source.release({
        requestId: "r",
        lockId: lock.id,
        expectedOwner: lock.owner!,
        expectedFingerprint: lock.ownerFingerprint!,
        dryRun: false,
        actor: "op1",
        reason: "stuck",
        ...over,
      });
    return { ...env, lock, release };
  }

  it("dry run: the plan, nothing deleted", async () => {
    const { zk, release } = await threeInQueue();
    const { result, output } = await release({ dryRun: true });
    expect(result).toMatchObject({ outcome: "dry-run", perNode: [{ node: `/p/Lock${seq(0)}`, outcome: "dry-run" }] });
    expect(result.plan[0]).toBe(
      `delete /p/Lock${seq(0)} (version 0, session 0x1) on zookeeper://127.0.0.1:2181; the next waiter Lock${seq(1)} becomes holder`,
    );
    expect(zk.deletes).toEqual([]);
    expect(output.events).toEqual([]);
  });

  it("deletes the holder at its version, keeps the parent, and reports the new holder at once", async () => {
    const { zk, source, release } = await threeInQueue();
    const { result, output } = await release();
    expect(result).toMatchObject({ outcome: "released", perNode: [{ node: `/p/Lock${seq(0)}`, outcome: "released" }] });
    expect(result.message).toContain(`Lock${seq(1)} holds now`);
    expect(zk.deletes).toEqual([{ path: `/p/Lock${seq(0)}`, version: 0 }]);
    expect(zk.nodes.has("/p")).toBe(true);
    expect(output.events.map((e) => [e.type, e.owner, e.previousOwner, e.detail?.reason, e.detail?.by])).toEqual([
      ["owner-changed", `Lock${seq(1)}`, `Lock${seq(0)}`, "force-released", "op1"],
    ]);
    expect(source.locks()[0]!.owner).toBe(`Lock${seq(1)}`);
    // The watch that the delete fired finds nothing new.
    expect((await source.poll()).events).toEqual([]);
  });

  it("the holder changed between the view and the release: refused, nothing deleted, the view catches up", async () => {
    const { zk, source, release } = await threeInQueue();
    zk.remove(`/p/Lock${seq(0)}`);
    const { result, output } = await release();
    expect(result.outcome).toBe("refused-owner-changed");
    expect(result.message).toContain(`holder is now Lock${seq(1)}`);
    expect(zk.deletes).toEqual([]);
    expect(output.events.map((e) => e.type)).toEqual(["owner-changed"]);
    expect(source.locks()[0]!.owner).toBe(`Lock${seq(1)}`);
  });

  it("the node changed between the check and the delete: ZooKeeper refuses the version, nothing deleted", async () => {
    const { zk, release } = await threeInQueue();
    zk.beforeDelete = () => {
      zk.nodes.get(`/p/Lock${seq(0)}`)!.version = 1;
    };
    const { result } = await release();
    expect(result.outcome).toBe("refused-owner-changed");
    expect(zk.nodes.has(`/p/Lock${seq(0)}`)).toBe(true);
  });

  it("the node went between the check and the delete: nothing to do", async () => {
    const { zk, release } = await threeInQueue();
    zk.beforeDelete = () => zk.nodes.delete(`/p/Lock${seq(0)}`);
    expect((await release()).result.outcome).toBe("nothing-to-do");
  });

  it("a lock it does not know, or a lost connection: nothing deleted", async () => {
    const { zk, source, release } = await threeInQueue();
    expect(
      (
        await source.release({
          requestId: "r",
          lockId: "nope",
          expectedOwner: "x",
          dryRun: false,
          actor: "a",
          reason: "r",
        })
      ).result.outcome,
    ).toBe("nothing-to-do");
    zk.setState("disconnected");
    expect((await release()).result.outcome).toBe("error");
    expect(zk.deletes).toEqual([]);
  });
});
