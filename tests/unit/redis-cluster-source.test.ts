import { createHash } from "node:crypto";
import { fingerprintOf } from "../../agent/release/fingerprint";
import { describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import type { ReleaseCommand } from "../../lib/contract/release";
import type { TrackerOutput } from "../../agent/core/tracker";
import { slotsContain, type SlotRange } from "../../agent/sources/redis/cluster-nodes";
import { RedisClusterSource, type ClusterNodeHandle } from "../../agent/sources/redis/redis-cluster-source";
import type { KeySample, RedisLockPort, RedisNodePort } from "../../agent/sources/redis/redis-port";
import type { RedisReleasePort } from "../../agent/sources/redis/redis-release";
import type { RedisSource } from "../../agent/sources/redis/redis-source";

/** Test keys carry their slot in their name (`lock:s<slot>:...`), in place of CRC16. */
const slotOf = (key: string) => Number(/:s(\d+):/.exec(key)?.[1] ?? 0);

/** One node of a fake cluster: its keys, role and slots, and switches for death and MOVED. */
class FakeNode implements RedisLockPort, RedisNodePort, RedisReleasePort {
  keys = new Map<string, string>();
  role: "master" | "replica" = "master";
  masterId: string | null = null;
  slots: SlotRange[] = [];
  dead = false;
  failed = false;
  calls = 0;
  constructor(
    readonly cluster: FakeCluster,
    readonly id: string,
    readonly address: string,
  ) {}

  private check() {
    this.calls++;
    if (this.dead) throw new Error("connect ECONNREFUSED");
  }

  async scan() {
    this.check();
    return { cursor: "0", keys: [...this.keys.keys()].map((k) => Buffer.from(k)) };
  }

  sampled = 0;
  resampled = 0;

  async sample(keys: Buffer[]): Promise<KeySample[]> {
    this.check();
    this.sampled += keys.length;
    return this.read(keys);
  }

  /** The sweep's cheap re-read: the same answer, or null (the full read decides) for a key this node does not serve. */
  async resample(keys: Buffer[]): Promise<Array<KeySample | null>> {
    this.check();
    this.resampled += keys.length;
    return this.read(keys).map((s) => (s.moved === undefined ? s : null));
  }

  private read(keys: Buffer[]): KeySample[] {
    return keys.map((key) => {
      const k = key.toString();
      const slot = slotOf(k);
      if (this.role !== "master" || !slotsContain(this.slots, slot)) {
        return { key, type: "none", pttl: -2, moved: `MOVED ${slot} ${this.cluster.ownerOf(slot)?.address ?? "?"}` };
      }
      const v = this.keys.get(k);
      if (v === undefined) return { key, type: "none", pttl: -2 };
      // Leases count down with the cluster's clock, as on a real server.
      return {
        key,
        type: "string",
        pttl: 60_000 - (this.cluster.nowMs - clock),
        string: { prefix: Buffer.from(v), length: v.length },
      };
    });
  }

  async numsub(channels: string[]) {
    return channels.flatMap((c) => [c, 0]);
  }

  async runId() {
    this.check();
    return `run-${this.id}`;
  }

  async info(section: "replication" | "cluster") {
    this.check();
    return section === "cluster" ? "cluster_enabled:1\r\n" : `role:${this.role === "master" ? "master" : "slave"}\r\n`;
  }

  async clusterNodes() {
    this.check();
    return this.cluster.nodesText();
  }

  async compareAndDelete(key: Buffer, sha1Hex: string) {
    const k = key.toString();
    const v = this.keys.get(k);
    if (v === undefined || createHash("sha1").update(v).digest("hex") !== sha1Hex) return 0;
    this.keys.delete(k);
    return 1;
  }

  async purgeFairWaiter(): Promise<number> {
    return 0;
  }

  async deleteIfHashField() {
    return 0;
  }
}

class FakeCluster {
  readonly nodes: FakeNode[] = [];
  /** The test's clock (the sources' and the servers'). */
  nowMs = clock;
  add(letter: string, port: number, slots: SlotRange[], masterOf?: FakeNode): FakeNode {
    const n = new FakeNode(this, letter.repeat(40), `127.0.0.1:${port}`);
    n.slots = slots;
    if (masterOf) {
      n.role = "replica";
      n.masterId = masterOf.id;
    }
    this.nodes.push(n);
    return n;
  }
  ownerOf(slot: number) {
    return this.nodes.find((n) => n.role === "master" && slotsContain(n.slots, slot));
  }
  byAddress(address: string) {
    return this.nodes.find((n) => n.address === address)!;
  }
  /** CLUSTER NODES as a real server prints it. */
  nodesText() {
    return this.nodes
      .map((n, i) => {
        const flags = `${n.role === "master" ? "master" : "slave"}${n.failed ? ",fail" : ""}`;
        const slots = n.slots.map((r) => (r.start === r.end ? `${r.start}` : `${r.start}-${r.end}`)).join(" ");
        return `${n.id} ${n.address}@1${n.address.split(":")[1]} ${flags} ${n.masterId ?? "-"} 0 0 ${i + 1} connected ${slots}`;
      })
      .join("\n");
  }
}

let ids = 0;
const clock = Date.parse("2026-01-01T00:00:00Z");

function build(
  cluster: FakeCluster,
  seed: FakeNode,
  extra: {
    now?: () => number;
    sweepMs?: number;
    subscribe?: (address: string, s: RedisSource) => () => void;
    /** Each connection's status callback, in the order they were opened (to send late connection events). */
    connections?: Array<{ address: string; onStatus: (up: boolean, error?: string) => void }>;
  } = {},
) {
  const lines: string[] = [];
  const source = new RedisClusterSource({
    seedId: `redis://${seed.address}/0`,
    seedNode: seed,
    agentId: "a1",
    newId: () => `ev-${++ids}`,
    log: (l) => lines.push(l),
    source: {
      lockPatterns: ["lock:*"],
      scanCount: 100,
      visitBudgetPerPoll: 0,
      valuePreviewBytes: 64,
      now: extra.now ?? (() => clock),
      ...(extra.sweepMs ? { sweepMs: extra.sweepMs } : {}),
    },
    ...(extra.subscribe ? { subscribe: extra.subscribe } : {}),
    refreshMs: 60_000,
    sourceIdOf: (a) => `redis://${a}/0`,
    nodeIdOf: (a) => `redis://${a}`,
    connect: (address, onStatus): ClusterNodeHandle => {
      const n = cluster.byAddress(address);
      extra.connections?.push({ address, onStatus });
      onStatus(true);
      return { lock: n, node: n, release: n, ready: Promise.resolve(), close: () => undefined };
    },
  });
  return { source, lines };
}

const kinds = (events: LockEvent[]) => events.map((e) => `${e.type} ${e.resource}`).sort();
const bySource = (out: TrackerOutput) => Object.fromEntries(out.upserts.map((l) => [l.resource, l.source]));

function threeMasters() {
  const c = new FakeCluster();
  const a = c.add("a", 7001, [{ start: 0, end: 99 }]);
  const b = c.add("b", 7002, [{ start: 100, end: 199 }]);
  const d = c.add("d", 7004, [], a); // a's replica
  a.keys.set("lock:s1:x", "tok-x").set("lock:s2:y", "tok-y");
  d.keys.set("lock:s1:x", "tok-x"); // lock:s2:y has not reached the replica
  b.keys.set("lock:s150:z", "tok-z");
  return { c, a, b, d };
}

describe("RedisClusterSource", () => {
  it("sweeps each master's quiet locks in track mode with the cheap re-read, as a single node does", async () => {
    const { c, a, b } = threeMasters();
    const { source } = build(c, a, {
      now: () => c.nowMs,
      sweepMs: 1000,
      // What the tracking connection does once CLIENT TRACKING is on for the member.
      subscribe: (_address, member) => {
        member.setChangeDetection("track");
        return () => undefined;
      },
    });
    await source.poll(); // tracking just enabled: every lock read once in full
    const full = a.sampled + b.sampled;
    expect(full).toBe(3);
    await source.poll(); // the sweep's clock starts
    c.nowMs += 1000; // one sweep period: every lock is due
    const out = await source.poll();
    expect(kinds(out.events)).toEqual([]);
    expect(a.resampled + b.resampled).toBe(3);
    expect(a.sampled + b.sampled).toBe(full); // no full read of an unchanged lock
    // A changed one is read in full and reported.
    b.keys.set("lock:s150:z", "tok-z2");
    c.nowMs += 1000;
    const changed = await source.poll();
    expect(kinds(changed.events)).toEqual(["owner-changed lock:s150:z"]);
    expect(b.sampled).toBe(2);
  });

  it("watches every master, one status each, and tags each lock with the master that serves its slot", async () => {
    const { c, a } = threeMasters();
    const { source } = build(c, a);
    const out = await source.poll();
    expect(kinds(out.events)).toEqual(["acquired lock:s150:z", "acquired lock:s1:x", "acquired lock:s2:y"]);
    expect(bySource(out)).toEqual({
      "lock:s1:x": "redis://127.0.0.1:7001/0",
      "lock:s2:y": "redis://127.0.0.1:7001/0",
      "lock:s150:z": "redis://127.0.0.1:7002/0",
    });
    expect(source.statuses().map((s) => [s.id, s.up, s.locks])).toEqual([
      ["redis://127.0.0.1:7001/0", true, 2],
      ["redis://127.0.0.1:7002/0", true, 1],
    ]);
    // Before a replication watcher has read anything, nodes come from the topology.
    expect(source.statuses()[0]!.nodes).toEqual([
      { id: "redis://127.0.0.1:7001", role: "master", up: true },
      { id: "redis://127.0.0.1:7004", role: "replica", up: true },
    ]);
    expect(source.locks()).toHaveLength(3);
  });

  it("follows a failover: same lock ids on the promoted replica, nothing released, the unreplicated lock lost", async () => {
    const { c, a, d } = threeMasters();
    const { source, lines } = build(c, a);
    const first = await source.poll();
    const ids = Object.fromEntries(first.upserts.map((l) => [l.resource, l.id]));
    a.dead = true;
    const during = await source.poll();
    expect(during.events).toEqual([]);
    expect(source.statuses()[0]).toMatchObject({ id: "redis://127.0.0.1:7001/0", up: false });
    // The replica is promoted; the dead master is flagged failed and keeps no slots.
    d.role = "master";
    d.masterId = null;
    d.slots = a.slots;
    a.slots = [];
    a.failed = true;
    const after = await source.poll();
    expect(kinds(after.events)).toEqual(["lost lock:s2:y"]);
    expect(after.events[0]!.detail).toMatchObject({ failoverFrom: "redis://127.0.0.1:7001/0" });
    expect(after.removed).toEqual([ids["lock:s2:y"]]);
    expect(after.upserts.map((l) => [l.id, l.source])).toEqual([[ids["lock:s1:x"], "redis://127.0.0.1:7004/0"]]);
    expect(source.statuses().map((s) => s.id)).toEqual(["redis://127.0.0.1:7004/0", "redis://127.0.0.1:7002/0"]);
    expect(lines.some((l) => /7001\/0 -> redis:\/\/127\.0\.0\.1:7004\/0 \(failover\)/.test(l))).toBe(true);
    expect((await source.poll()).events).toEqual([]);
  });

  it("ignores the replaced connection's late close after a failover: the promoted replica stays up", async () => {
    const { c, a, d } = threeMasters();
    const connections: Array<{ address: string; onStatus: (up: boolean, error?: string) => void }> = [];
    const { source } = build(c, a, { connections });
    await source.poll();
    a.dead = true;
    await source.poll();
    d.role = "master";
    d.masterId = null;
    d.slots = a.slots;
    a.slots = [];
    a.failed = true;
    await source.poll();
    expect(source.statuses()[0]).toMatchObject({ id: "redis://127.0.0.1:7004/0", up: true });
    // ioredis emits "close" and "end" after disconnect(), possibly after the new connection is ready.
    const old = connections.find((x) => x.address === a.address)!;
    old.onStatus(false, "connection closed");
    expect(source.statuses()[0]).toMatchObject({ id: "redis://127.0.0.1:7004/0", up: true });
    // The promoted node's own connection still reports.
    const promoted = connections.find((x) => x.address === d.address)!;
    promoted.onStatus(false, "connection closed");
    expect(source.statuses()[0]).toMatchObject({ up: false, error: "connection closed" });
  });

  it("follows a manual failover where the old master answers MOVED: no poll reads that as releases", async () => {
    const { c, a, d } = threeMasters();
    const { source } = build(c, a);
    await source.poll();
    // CLUSTER FAILOVER on the replica: roles swap, the old master now redirects.
    d.keys.set("lock:s2:y", "tok-y");
    d.role = "master";
    d.masterId = null;
    d.slots = a.slots;
    a.role = "replica";
    a.masterId = d.id;
    a.slots = [];
    const moved = await source.poll();
    expect(moved.events).toEqual([]); // the stale topology made the read fail: nothing changes
    const after = await source.poll();
    expect(after.events).toEqual([]);
    expect(Object.values(bySource(after))).toEqual(["redis://127.0.0.1:7004/0", "redis://127.0.0.1:7004/0"]);
    expect(source.locks()).toHaveLength(3);
  });

  it("follows a key that resharding moved to another master: no release, no second acquisition", async () => {
    const { c, a, b } = threeMasters();
    const { source } = build(c, a);
    const first = await source.poll();
    const id = first.upserts.find((l) => l.resource === "lock:s2:y")!.id;
    // Slot 2 moves from a to b, with its key.
    a.slots = [
      { start: 0, end: 1 },
      { start: 3, end: 99 },
    ];
    b.slots = [
      { start: 2, end: 2 },
      { start: 100, end: 199 },
    ];
    b.keys.set("lock:s2:y", a.keys.get("lock:s2:y")!);
    a.keys.delete("lock:s2:y");
    await source.poll(); // a answers MOVED for a slot it still owned in the last topology: re-read next poll
    const out = await source.poll();
    expect(kinds(out.events)).toEqual([]);
    expect(out.removed).toEqual([]);
    expect(source.locks().find((l) => l.id === id)!.source).toBe("redis://127.0.0.1:7002/0");
  });

  it("routes a force-release to the master that has the lock", async () => {
    const { c, a, b } = threeMasters();
    const { source } = build(c, a);
    const first = await source.poll();
    const z = first.upserts.find((l) => l.resource === "lock:s150:z")!;
    expect(source.has(z.id)).toBe(true);
    const cmd = (lockId: string, expectedOwner: string): ReleaseCommand => ({
      requestId: "r1",
      lockId,
      expectedOwner,
      expectedFingerprint: fingerprintOf(Buffer.from(expectedOwner)),
      reason: "stuck",
      actor: "op",
      dryRun: false,
    });
    const { result, output } = await source.release(cmd(z.id, "tok-z"));
    expect(result.outcome).toBe("released");
    expect(result.perNode).toEqual([{ node: "redis://127.0.0.1:7002/0", outcome: "released" }]);
    expect(kinds(output.events)).toEqual(["released lock:s150:z"]);
    expect(b.keys.has("lock:s150:z")).toBe(false);
    const none = await source.release(cmd("nope", "x"));
    expect(none.result.outcome).toBe("nothing-to-do");
  });

  it("reports the seed down until a topology is read, then asks any member that answers", async () => {
    const { c, a, b } = threeMasters();
    a.dead = true;
    const { source } = build(c, a);
    await source.poll();
    expect(source.statuses()).toEqual([
      expect.objectContaining({
        id: "redis://127.0.0.1:7001/0",
        up: false,
        error: expect.stringMatching(/ECONNREFUSED/),
      }),
    ]);
    a.dead = false;
    await source.poll();
    expect(source.statuses()).toHaveLength(2);
    // The seed dies; the topology is read from the member that still answers.
    a.dead = true;
    b.calls = 0;
    await source.poll(); // a fails: stale
    await source.poll();
    expect(b.calls).toBeGreaterThan(0);
    expect(source.statuses().map((s) => s.up)).toEqual([false, true]);
  });
});
