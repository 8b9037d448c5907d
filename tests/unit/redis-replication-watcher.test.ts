import { describe, expect, it } from "vitest";
import type { KeySample, RedisLockPort, RedisNodePort, RedisReplicaPort } from "../../agent/sources/redis/redis-port";
import { RedisSource, type LockAnnotator } from "../../agent/sources/redis/redis-source";
import { ReplicationWatcher } from "../../agent/sources/redis/replication-watcher";

const R1 = "127.0.0.1:6380";
const R2 = "127.0.0.1:6381";

/** The master's side: its INFO replication, from the replicas currently attached. */
class FakeMasterInfo implements RedisNodePort {
  replicas: string[] = [R1];
  role: "master" | "slave" = "master";
  failing: string | null = null;
  offset = 100;
  replicaOffset = 90;
  async info() {
    if (this.failing) throw new Error(this.failing);
    if (this.role === "slave")
      return "role:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6379\r\nmaster_link_status:up\r\n";
    const lines = this.replicas.map((a, i) => {
      const [ip, port] = a.split(":");
      return `slave${i}:ip=${ip},port=${port},state=online,offset=${this.replicaOffset},lag=0`;
    });
    return ["# Replication", "role:master", ...lines, `master_repl_offset:${this.offset}`, ""].join("\r\n");
  }
  async clusterNodes(): Promise<string> {
    throw new Error("ERR This instance has cluster support disabled");
  }
}

/** A replica's side: the keys it has, every EXISTS batch it was sent, and a switch to stop answering. */
class FakeReplica implements RedisReplicaPort {
  keys = new Set<string>();
  batches: number[] = [];
  failing: string | null = null;
  closed = false;
  async exists(keys: Buffer[]) {
    if (this.failing) throw new Error(this.failing);
    this.batches.push(keys.length);
    return keys.map((k) => this.keys.has(k.toString()));
  }
}

function setup(opts: { checkReplicas?: boolean; existsBatch?: number } = {}) {
  const master = new FakeMasterInfo();
  const replicas = new Map<string, FakeReplica>([
    [R1, new FakeReplica()],
    [R2, new FakeReplica()],
  ]);
  const connected: string[] = [];
  const clock = { ms: 0 };
  const watcher = new ReplicationWatcher({
    nodeId: "redis://127.0.0.1:6379",
    node: master,
    cluster: false,
    checkReplicas: opts.checkReplicas ?? true,
    replicaId: (a) => `redis://${a}`,
    connectReplica: (address) => {
      connected.push(address);
      const r = replicas.get(address)!;
      r.closed = false;
      return { port: r, ready: Promise.resolve(), close: () => (r.closed = true) };
    },
    existsBatch: opts.existsBatch ?? 250,
    now: () => clock.ms,
  });
  return { master, replicas, watcher, connected, clock, r1: replicas.get(R1)! };
}

const locks = (...names: string[]) => names.map((n) => ({ id: `id-${n}`, name: n }));

describe("ReplicationWatcher", () => {
  it("flags a lock missing on a replica for two polls, and clears it once the replica has it", async () => {
    const { watcher, r1 } = setup();
    r1.keys.add("lock:a");
    expect((await watcher.annotate(locks("lock:a", "lock:b"))).size).toBe(0);
    const second = await watcher.annotate(locks("lock:a", "lock:b"));
    expect([...second.keys()]).toEqual(["id-lock:b"]);
    expect(second.get("id-lock:b")![0]).toMatchObject({ code: "not-replicated", severity: "critical" });
    r1.keys.add("lock:b");
    expect((await watcher.annotate(locks("lock:a", "lock:b"))).size).toBe(0);
  });

  it("asks in bounded pipelined batches, and only PINGs when there is nothing to compare", async () => {
    const { watcher, r1 } = setup({ existsBatch: 3 });
    await watcher.annotate(locks("1", "2", "3", "4", "5", "6", "7"));
    expect(r1.batches).toEqual([3, 3, 1]);
    r1.batches = [];
    await watcher.annotate([]);
    expect(r1.batches).toEqual([0]);
  });

  it("claims nothing about a replica that does not answer, and shows it down with the reason", async () => {
    const { watcher, r1 } = setup();
    await watcher.annotate(locks("lock:a"));
    r1.failing = "Command timed out";
    expect((await watcher.annotate(locks("lock:a"))).size).toBe(0);
    expect(watcher.nodes({ up: true })).toEqual([
      { id: "redis://127.0.0.1:6379", role: "master", up: true, offset: 100 },
      { id: `redis://${R1}`, role: "replica", up: false, offset: 90, lagBytes: 10, error: "Command timed out" },
    ]);
    r1.failing = null;
    expect((await watcher.annotate(locks("lock:a"))).size).toBe(0); // the count started over
  });

  it("judges a replica that stopped answering by what its master says it acknowledged", async () => {
    const { master, watcher, clock, r1 } = setup();
    master.offset = 90;
    master.replicaOffset = 90;
    r1.keys.add("lock:old");
    await watcher.annotate(locks("lock:old")); // seen while the replica was caught up
    r1.failing = "Command timed out"; // frozen from here on: it acknowledges nothing more
    master.offset = 150;
    await watcher.annotate(locks("lock:old", "lock:new")); // lock:new was written after the replica's last ack
    clock.ms += 1000;
    expect((await watcher.annotate(locks("lock:old", "lock:new"))).size).toBe(0); // an ack could still be on its way
    clock.ms += 1500;
    expect((await watcher.annotate(locks("lock:old", "lock:new"))).size).toBe(0); // first overdue miss
    clock.ms += 500;
    const flagged = await watcher.annotate(locks("lock:old", "lock:new"));
    expect([...flagged.keys()]).toEqual(["id-lock:new"]);
    expect(flagged.get("id-lock:new")![0]!.message).toContain(`replica ${R1} (which has not acknowledged it)`);
    // It catches up and answers again: the hazard goes.
    r1.failing = null;
    r1.keys.add("lock:new");
    master.replicaOffset = 150;
    expect((await watcher.annotate(locks("lock:old", "lock:new"))).size).toBe(0);
  });

  it("forgets first-seen offsets when the master's offset goes back (a restarted master)", async () => {
    const { master, watcher, clock, r1 } = setup();
    r1.failing = "Command timed out";
    master.offset = 5000;
    await watcher.annotate(locks("lock:a"));
    master.offset = 10; // restarted: offsets start over below what was recorded
    master.replicaOffset = 10;
    for (let i = 0; i < 4; i++) {
      clock.ms += 3000;
      expect((await watcher.annotate(locks("lock:a"))).size).toBe(0);
    }
  });

  it("follows the changes it is given instead of going through every lock, and all of them after a restart", async () => {
    const { master, watcher, clock, r1 } = setup();
    let reads = 0;
    const counted = (name: string) => ({
      get id() {
        reads++;
        return `id-${name}`;
      },
      name,
    });
    const same = [counted("lock:a")];
    master.offset = 5000;
    master.replicaOffset = 5000;
    r1.keys.add("lock:a"); // the replica has it: its check reads no id either
    await watcher.annotate(same);
    reads = 0;
    await watcher.annotate(same, { added: [], removed: [] });
    expect(reads).toBe(0);
    // Restarted, and the replica stops answering: offsets start over, and lock:a is first seen again at 50, past
    // the 10 the replica acknowledged.
    r1.failing = "Command timed out";
    master.offset = 50;
    master.replicaOffset = 10;
    const none = { added: [], removed: [] };
    await watcher.annotate(same, none);
    expect(reads).toBeGreaterThan(0);
    clock.ms += 2500;
    await watcher.annotate(same, none);
    clock.ms += 1000;
    expect([...(await watcher.annotate(same, none)).keys()]).toEqual(["id-lock:a"]);
    // A lock added by the changes is first seen now (past the acknowledged offset), a removed one is forgotten.
    const next = [counted("lock:b")];
    await watcher.annotate(next, { added: ["id-lock:b"], removed: ["id-lock:a"] });
    clock.ms += 2500;
    await watcher.annotate(next, none);
    expect([...(await watcher.annotate(next, none)).keys()]).toEqual(["id-lock:b"]);
  });

  it("connects to replicas as they appear and closes connections to those that left", async () => {
    const { master, watcher, connected, replicas } = setup();
    await watcher.annotate([]);
    master.replicas = [R1, R2];
    await watcher.annotate([]);
    master.replicas = [R2];
    await watcher.annotate([]);
    expect(connected).toEqual([R1, R2]);
    expect(replicas.get(R1)!.closed).toBe(true);
    expect(replicas.get(R2)!.closed).toBe(false);
    watcher.close();
    expect(replicas.get(R2)!.closed).toBe(true);
  });

  it("checks nothing on a node that is itself a replica, and shows it as one", async () => {
    const { master, watcher, connected } = setup();
    master.role = "slave";
    expect((await watcher.annotate(locks("lock:a"))).size).toBe(0);
    expect(connected).toEqual([]);
    expect(watcher.nodes({ up: true })).toEqual([{ id: "redis://127.0.0.1:6379", role: "replica", up: true }]);
  });

  it("with REDIS_REPLICA_CHECK off, connects to nothing but still shows the replicas from INFO", async () => {
    const { watcher, connected } = setup({ checkReplicas: false });
    await watcher.annotate(locks("lock:a"));
    await watcher.annotate(locks("lock:a"));
    expect(connected).toEqual([]);
    expect(watcher.nodes({ up: true })![1]).toEqual({
      id: `redis://${R1}`,
      role: "replica",
      up: true,
      offset: 90,
      lagBytes: 10,
    });
  });

  it("shows nothing before its first read, and why INFO failed after", async () => {
    const { master, watcher } = setup();
    expect(watcher.nodes({ up: false })).toBeUndefined();
    master.failing = "NOPERM this user has no permissions to run the 'info' command";
    await watcher.annotate([]);
    expect(watcher.nodes({ up: true })).toEqual([
      {
        id: "redis://127.0.0.1:6379",
        role: "unknown",
        up: true,
        error: "INFO replication: NOPERM this user has no permissions to run the 'info' command",
      },
    ]);
  });
});

/** A node with string keys: enough for RedisSource to find and read locks. */
class FakeNode implements RedisLockPort {
  keys = new Map<string, string>();
  moved = new Set<string>();
  runIdValue = "run-1";
  async scan() {
    return { cursor: "0", keys: [...this.keys.keys(), ...this.moved].map((k) => Buffer.from(k)) };
  }
  async sample(keys: Buffer[]): Promise<KeySample[]> {
    return keys.map((key) => {
      const k = key.toString();
      if (this.moved.has(k)) return { key, type: "none", pttl: -2, moved: "MOVED 42 127.0.0.1:7002" };
      const v = this.keys.get(k);
      if (v === undefined) return { key, type: "none", pttl: -2 };
      return { key, type: "string", pttl: 30_000, string: { prefix: Buffer.from(v), length: v.length } };
    });
  }
  async numsub(channels: string[]) {
    return channels.flatMap((c) => [c, 0]);
  }
  async runId() {
    return this.runIdValue;
  }
}

let ids = 0;
const clock = Date.parse("2026-01-01T00:00:00Z");

function source(node: RedisLockPort, annotator?: LockAnnotator, extra: { lockIdScope?: string } = {}) {
  return new RedisSource(node, {
    sourceId: "redis://127.0.0.1:6379/0",
    agentId: "a1",
    lockPatterns: ["lock:*"],
    scanCount: 100,
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    newId: () => `ev-${++ids}`,
    now: () => clock,
    ...(annotator ? { annotator } : {}),
    ...extra,
  });
}

describe("RedisSource annotator hook", () => {
  const hazard = { code: "not-replicated", severity: "critical" as const, message: "not on the replica" };

  it("adds the annotator's hazards to the locks it names, as an update", async () => {
    const node = new FakeNode();
    node.keys.set("lock:a", "tok-a").set("lock:b", "tok-b");
    let flag = false;
    const seen: string[][] = [];
    const s = source(node, {
      annotate: async (ls) => {
        seen.push(ls.map((l) => l.name));
        const a = ls.find((l) => l.name === "lock:a")!;
        return new Map(flag ? [[a.id, [hazard]]] : []);
      },
    });
    await s.poll();
    flag = true;
    const out = await s.poll();
    expect(seen).toEqual([
      ["lock:a", "lock:b"],
      ["lock:a", "lock:b"],
    ]);
    expect(out.events).toEqual([]);
    expect(out.upserts.map((l) => [l.resource, l.hazards.map((h) => h.code)])).toEqual([
      ["lock:a", ["not-replicated"]],
    ]);
    // A keyspace notification re-reads the lock between polls: the hazard stays rather than flickering.
    const notified = await s.refreshNotified([Buffer.from("lock:a")]);
    expect(notified.upserts).toEqual([]);
    expect(
      s.tracker
        .locks()
        .find((l) => l.resource === "lock:a")!
        .hazards.map((h) => h.code),
    ).toContain("not-replicated");
  });

  it("in track mode hands every tracked lock with what changed since the last poll", async () => {
    const node = new FakeNode();
    node.keys.set("lock:a", "tok-a").set("lock:b", "tok-b");
    const seen: Array<{ keys: string[]; added?: string[]; removed?: string[]; list: unknown }> = [];
    const s = source(node, {
      annotate: async (ls, changes) => {
        const key = (id: string) => ls.find((l) => l.id === id)?.name ?? id;
        seen.push({
          keys: ls.map((l) => l.name).sort(),
          ...(changes ? { added: changes.added.map(key), removed: [...changes.removed] } : {}),
          list: ls,
        });
        return new Map();
      },
    });
    s.setChangeDetection("track");
    await s.poll(); // the first poll in track mode reads every lock once: everything is handed, no changes
    await s.poll();
    await s.poll();
    expect(seen.map(({ list: _l, ...x }) => x)).toEqual([
      { keys: ["lock:a", "lock:b"] },
      { keys: ["lock:a", "lock:b"], added: [], removed: [] },
      { keys: ["lock:a", "lock:b"], added: [], removed: [] },
    ]);
    expect(seen[2]!.list).toBe(seen[1]!.list); // nothing came or went: the same list, not a new one
    const idOfA = s.tracker.locks().find((l) => l.resource === "lock:a")!.id;
    node.keys.set("lock:c", "tok-c");
    node.keys.delete("lock:a");
    await s.refreshNotified([Buffer.from("lock:c"), Buffer.from("lock:a")]);
    await s.poll();
    expect(seen[3]).toMatchObject({ keys: ["lock:b", "lock:c"], added: ["lock:c"], removed: [idOfA] });
  });

  it("polls on without extra hazards when the annotator fails", async () => {
    const node = new FakeNode();
    node.keys.set("lock:a", "tok-a");
    const s = source(node, {
      annotate: () => {
        throw new Error("replica exploded");
      },
    });
    const out = await s.poll();
    expect(out.events.map((e) => e.type)).toEqual(["acquired"]);
    expect(s.status()).toMatchObject({ up: true, locks: 1 });
  });

  it("derives lock ids from lockIdScope when given, keeping the source as the node", async () => {
    const node = new FakeNode();
    node.keys.set("lock:a", "tok-a");
    const plain = source(node);
    const scoped = source(node, undefined, { lockIdScope: "cluster:redis://127.0.0.1:7000/0" });
    const [p] = (await plain.poll()).upserts;
    const [c] = (await scoped.poll()).upserts;
    expect(c!.id).not.toBe(p!.id);
    expect(c!.source).toBe("redis://127.0.0.1:6379/0");
  });

  it("lets a key answered with MOVED go without reporting a release", async () => {
    const node = new FakeNode();
    node.keys.set("lock:a", "tok-a");
    const s = source(node);
    await s.poll();
    node.keys.delete("lock:a");
    node.moved.add("lock:a");
    const out = await s.poll();
    expect(out.events).toEqual([]);
    expect(s.tracker.size).toBe(0);
  });

  it("after retarget (failover) keeps the ids, moves the source, and reports what the new node lacks as lost", async () => {
    const old = new FakeNode();
    old.keys.set("lock:a", "tok-a").set("lock:b", "tok-b");
    const s = source(old, undefined, { lockIdScope: "cluster:x" });
    const first = await s.poll();
    const idOf = (r: string) => first.upserts.find((l) => l.resource === r)!.id;
    const promoted = new FakeNode();
    promoted.runIdValue = "run-2";
    promoted.keys.set("lock:a", "tok-a"); // lock:b had not reached the replica
    s.retarget({ sourceId: "redis://127.0.0.1:7004/0", port: promoted, failover: true });
    const out = await s.poll();
    expect(out.events.map((e) => [e.type, e.resource, e.lockId])).toEqual([["lost", "lock:b", idOf("lock:b")]]);
    expect(out.events[0]!.detail).toMatchObject({
      reason: "server-restarted",
      failoverFrom: "redis://127.0.0.1:6379/0",
    });
    expect(out.upserts.map((l) => [l.id, l.source])).toEqual([[idOf("lock:a"), "redis://127.0.0.1:7004/0"]]);
    expect(s.status().id).toBe("redis://127.0.0.1:7004/0");
    // The next poll on the new node is an ordinary one.
    promoted.keys.delete("lock:a");
    expect((await s.poll()).events.map((e) => [e.type, e.detail?.reason])).toEqual([["released", undefined]]);
  });
});
