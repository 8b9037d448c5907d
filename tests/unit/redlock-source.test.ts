import { describe, expect, it } from "vitest";
import type { KeySample } from "../../agent/sources/redis/redis-port";
import type { RedlockNodePort } from "../../agent/sources/redlock/redlock-port";
import { RedlockSource, type RedlockSourceOptions } from "../../agent/sources/redlock/redlock-source";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";
import type { Lock } from "../../lib/contract/lock";
import type { TrackerOutput } from "../../agent/core/tracker";
import { waitFor } from "../harness/ports";
import { releaseCommandFor } from "../harness/release-command";

const TOKEN = "0123456789abcdef0123456789abcdef";
const OTHER = "fedcba9876543210fedcba9876543210";
const TIMEOUT = 60;

type Value = { type: "string"; value: Buffer } | { type: "hash"; fields: Array<[Buffer, Buffer]> } | { type: "set" };

/** One fake Redis node: keys with expiry on the test's clock; can be frozen (answers nothing) or failing. */
class FakeNode implements RedlockNodePort {
  readonly keys = new Map<string, Value & { expiresAt: number | null }>();
  frozen = false;
  failure: Error | null = null;
  calls = 0;
  private thawed: Array<() => void> = [];

  constructor(private readonly clock: { now: number }) {}

  set(key: string, value: string | Value, ttlMs: number | null): void {
    const v: Value = typeof value === "string" ? { type: "string", value: Buffer.from(value) } : value;
    this.keys.set(key, { ...v, expiresAt: ttlMs === null ? null : this.clock.now + ttlMs });
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const t of this.thawed.splice(0)) t();
  }

  private async gate(): Promise<void> {
    this.calls++;
    if (this.frozen) await new Promise<void>((r) => this.thawed.push(r));
    if (this.failure) throw this.failure;
  }

  private live(key: string) {
    const k = this.keys.get(key);
    if (k && k.expiresAt !== null && k.expiresAt <= this.clock.now) {
      this.keys.delete(key);
      return undefined;
    }
    return k;
  }

  async scan(cursor: string, _count: number) {
    await this.gate();
    const keys = [...this.keys.keys()].filter((k) => this.live(k)).map((k) => Buffer.from(k, "utf8"));
    return { cursor: "0", keys: cursor === "0" ? keys : [] };
  }

  async sample(
    keys: Buffer[],
    expected: ReadonlyArray<string | undefined>,
    previewBytes: number,
  ): Promise<KeySample[]> {
    await this.gate();
    return keys.map((key, i) => {
      const k = this.live(key.toString("utf8"));
      if (!k) return { key, type: "none", pttl: -2 };
      const pttl = k.expiresAt === null ? -1 : k.expiresAt - this.clock.now;
      const s: KeySample = { key, type: k.type, pttl };
      if (expected[i] !== undefined && expected[i] !== k.type) return s;
      if (k.type === "string") s.string = { prefix: k.value.subarray(0, previewBytes), length: k.value.length };
      if (k.type === "hash") s.hash = { length: k.fields.length, fields: k.fields };
      return s;
    });
  }

  timeError: Error | null = null;

  async time() {
    await this.gate();
    if (this.timeError) throw this.timeError;
    const ms = Date.now();
    return [String(Math.floor(ms / 1000)), String((ms % 1000) * 1000)];
  }
}

function setup(n = 5, extra: Partial<RedlockSourceOptions> = {}) {
  const clock = { now: 1_800_000_000_000 };
  const nodes = Array.from({ length: n }, () => new FakeNode(clock));
  let ids = 0;
  const logs: string[] = [];
  const source = new RedlockSource(
    nodes.map((port, i) => ({ id: `redis://127.0.0.1:${7000 + i}/0`, port })),
    {
      group: "orders",
      agentId: "agent-1",
      newId: () => `event-${++ids}`,
      lockPatterns: DEFAULT_LOCK_PATTERNS,
      nodeTimeoutMs: TIMEOUT,
      now: () => clock.now,
      log: (l) => logs.push(l),
      ...extra,
    },
  );
  /** Sets key=value with ttl on the nodes whose index is listed. */
  const put = (key: string, value: string | Value, ttl: number | null, on: number[]) =>
    on.forEach((i) => nodes[i]!.set(key, value, ttl));
  const only = (locks: Lock[]) => {
    expect(locks).toHaveLength(1);
    return locks[0]!;
  };
  return { clock, nodes, source, put, only, logs };
}

const ALL = [0, 1, 2, 3, 4];

describe("RedlockSource", () => {
  it("finds locks by pattern and node-redlock tokens by value, and reports the quorum", async () => {
    const { source, put, only } = setup();
    put("orders:42", TOKEN, 10_000, ALL); // outside the patterns: found because the value is 32 lowercase hex
    put("session:abc", "not a token", 10_000, ALL); // neither: ignored
    put("cache:x", "0123456789ABCDEF0123456789ABCDEF", 10_000, ALL); // upper case: not node-redlock
    const out = await source.poll();
    const lock = only(source.locks());
    expect(lock).toMatchObject({
      backend: "redlock",
      source: "orders",
      resource: "orders:42",
      owner: TOKEN,
      library: "node-redlock",
      rule: "redlock-32-hex-token",
      kind: "string",
      ttlMs: 10_000,
      agentId: "agent-1",
      hazards: [],
    });
    expect(lock.quorum).toMatchObject({
      group: "orders",
      votes: 5,
      nodes: 5,
      needed: 3,
      state: "held",
      partial: false,
      validityMs: 10_000 - 102,
    });
    expect(lock.quorum!.perNode.map((p) => [p.state, p.present, p.token])).toEqual(ALL.map(() => ["up", true, TOKEN]));
    expect(out.events.map((e) => [e.type, e.detail?.quorumState])).toEqual([["acquired", "held"]]);
    expect(out.upserts).toHaveLength(1);
    expect(source.status()).toMatchObject({ id: "orders", kind: "redlock", up: true, locks: 1 });
    expect(source.status().error).toBeUndefined();
  });

  it("a token on two of five nodes is a minority leftover; a generic value keeps the generic library", async () => {
    const { source, put, only } = setup();
    put("job-lock:nightly", "host-7:thread-3", 30_000, [1, 3]);
    await source.poll();
    const lock = only(source.locks());
    expect(lock.library).toBe("generic");
    expect(lock.quorum).toMatchObject({ state: "minority", votes: 2 });
    expect(lock.hazards.map((h) => h.code)).toEqual(["redlock-minority"]);
    expect(lock.quorum!.perNode.map((p) => p.present)).toEqual([false, true, false, true, false]);
  });

  it("two tokens with two nodes each are a split vote", async () => {
    const { source, put, only } = setup();
    put("lock:pay", TOKEN, 10_000, [0, 1]);
    put("lock:pay", OTHER, 10_000, [2, 3]);
    await source.poll();
    expect(only(source.locks()).quorum!.state).toBe("split");
  });

  it("Redisson RedLock hashes vote by their holder field", async () => {
    const { source, put, only } = setup(3);
    const field = "8d2a1e3f-5b6c-4d7e-8f90-a1b2c3d4e5f6:77";
    put("myLock", { type: "hash", fields: [[Buffer.from(field), Buffer.from("1")]] }, 30_000, [0, 1, 2]);
    put("blocked-users", { type: "set" }, null, [0, 1, 2]); // matches *lock* but is no lock: ignored
    await source.poll();
    const lock = only(source.locks());
    expect(lock).toMatchObject({ resource: "myLock", owner: field, library: "redisson", kind: "hash" });
    expect(lock.quorum!.state).toBe("held");
  });

  it("a frozen node does not stall the poll: the others are evaluated and the view is partial", async () => {
    const { source, nodes, put, only, logs } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    nodes[2]!.freeze();
    const started = performance.now();
    await source.poll();
    // Two rounds per poll, but the frozen node is cut at the first deadline and not asked again.
    expect(performance.now() - started).toBeLessThan(TIMEOUT + 200);
    let lock = only(source.locks());
    expect(lock.quorum).toMatchObject({ votes: 4, partial: true, state: "held" });
    expect(lock.quorum!.perNode[2]).toMatchObject({
      state: "slow",
      present: false,
      token: null,
      error: `no answer within ${TIMEOUT} ms`,
    });
    expect(lock.hazards.map((h) => h.code)).toEqual(["redlock-node-down"]);
    expect(source.status().up).toBe(true);
    expect(source.status().error).toContain("redis://127.0.0.1:7002/0");
    // Still silent at the third poll: counted as down.
    await source.poll();
    await source.poll();
    lock = only(source.locks());
    expect(lock.quorum!.perNode[2]!.state).toBe("down");
    expect(source.health().nodes[2]).toMatchObject({ state: "down", missedPolls: 3 });
    expect(logs.some((l) => l.includes("7002/0 slow"))).toBe(true);
    // The stuck request is still pending: no more commands are queued behind it.
    const calls = nodes[2]!.calls;
    await source.poll();
    expect(nodes[2]!.calls).toBe(calls);
    nodes[2]!.thaw();
    await source.poll(); // the stale request settles during this poll
    await source.poll();
    lock = only(source.locks());
    expect(lock.quorum).toMatchObject({ votes: 5, partial: false });
    expect(lock.quorum!.perNode[2]!.state).toBe("up");
  });

  it("a refused node is down with the connection's reason", async () => {
    const { source, nodes, put, only } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    nodes[4]!.failure = new Error("Stream isn't writeable and enableOfflineQueue options is false");
    source.setConnection("redis://127.0.0.1:7004/0", false, "connect ECONNREFUSED 127.0.0.1:7004");
    await source.poll();
    expect(only(source.locks()).quorum!.perNode[4]).toMatchObject({
      state: "down",
      error: "connect ECONNREFUSED 127.0.0.1:7004",
    });
    expect(source.health().nodes[4]).toMatchObject({ state: "down", error: "connect ECONNREFUSED 127.0.0.1:7004" });
  });

  it("a node that refuses TIME still votes; only its clock is unknown", async () => {
    const { source, nodes, put, only } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    nodes[1]!.timeError = new Error("ERR unknown command 'TIME', with args beginning with: ");
    await source.poll();
    expect(only(source.locks()).quorum).toMatchObject({ votes: 5, state: "held", partial: false });
    expect(source.health().nodes[1]).toMatchObject({ state: "up" });
    expect(source.health().nodes[1]!.clockOffsetMs).toBeUndefined();
  });

  it("held -> at-risk -> quorum-lost as nodes go, with upserts carrying each change", async () => {
    const { source, nodes, put, only } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    const states: string[] = [];
    for (const i of [0, 1, 2]) {
      nodes[i]!.failure = new Error("connection closed");
      const out = await source.poll();
      expect(out.upserts).toHaveLength(1);
      states.push(only(source.locks()).quorum!.state);
    }
    expect(states).toEqual(["held", "at-risk", "quorum-lost"]);
    const lock = only(source.locks());
    expect(lock.hazards.find((h) => h.code === "redlock-quorum-lost")?.severity).toBe("critical");
    expect(lock.hazards.find((h) => h.code === "redlock-node-down")?.severity).toBe("critical");
    expect(source.status().up).toBe(false);
  });

  it("keys deleted early on three nodes while valid: quorum-lost, not a release", async () => {
    const { source, nodes, put, only } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    for (const i of [0, 1, 2]) nodes[i]!.keys.delete("lock:a");
    const out = await source.poll();
    expect(out.events).toEqual([]);
    expect(only(source.locks()).quorum!.state).toBe("quorum-lost");
  });

  it("release on every node: released event and removal", async () => {
    const { source, nodes, put, clock } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    clock.now += 1000;
    for (const n of nodes) n.keys.delete("lock:a");
    const out = await source.poll();
    expect(out.events.map((e) => e.type)).toEqual(["released"]);
    expect(out.removed).toHaveLength(1);
    expect(source.locks()).toEqual([]);
  });

  it("lease runs out on every node: expired event", async () => {
    const { source, put, clock } = setup();
    put("lock:a", TOKEN, 2_000, ALL);
    await source.poll();
    clock.now += 2_050;
    const out = await source.poll();
    expect(out.events.map((e) => e.type)).toEqual(["expired"]);
  });

  it("absence seen by fewer nodes than a quorum is not a release", async () => {
    const { source, nodes, put, only } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    for (const i of [0, 1, 2]) nodes[i]!.failure = new Error("connection closed");
    for (const i of [3, 4]) nodes[i]!.keys.delete("lock:a");
    const out = await source.poll();
    expect(out.events).toEqual([]);
    expect(only(source.locks())).toMatchObject({
      owner: TOKEN,
      quorum: { state: "quorum-lost", votes: 0, partial: true },
    });
  });

  it("when no node answers the last view is kept unchanged", async () => {
    const { source, nodes, put, only } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    const before = only(source.locks());
    for (const n of nodes) n.failure = new Error("connection closed");
    const out = await source.poll();
    expect(out).toEqual({ events: [], upserts: [], removed: [] });
    expect(only(source.locks())).toEqual(before);
    expect(source.status()).toMatchObject({ up: false });
  });

  it("a quiet poll sends nothing; a renewal sends the lock with a renewed event", async () => {
    const { source, nodes, put, clock } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    clock.now += 1000;
    expect(await source.poll()).toEqual({ events: [], upserts: [], removed: [] });
    for (const n of nodes) n.set("lock:a", TOKEN, 10_000);
    clock.now += 1000;
    const out = await source.poll();
    expect(out.events.map((e) => e.type)).toEqual(["renewed"]);
    expect(out.upserts).toHaveLength(1);
  });

  it("an extend that reached two nodes only is sent (per-node TTL off its countdown) and leaves no spare", async () => {
    const { source, nodes, put, clock, only } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    clock.now += 1000;
    nodes[0]!.set("lock:a", TOKEN, 10_000);
    nodes[1]!.set("lock:a", TOKEN, 10_000);
    const out = await source.poll();
    expect(out.events).toEqual([]); // the quorum's TTL (third longest) did not move
    expect(out.upserts).toHaveLength(1);
    expect(only(source.locks()).quorum!.perNode.map((p) => p.ttlMs)).toEqual([10_000, 10_000, 9_000, 9_000, 9_000]);
  });

  it("owner changes are lifecycle events", async () => {
    const { source, nodes, put, clock } = setup();
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    clock.now += 500;
    for (const n of nodes) n.set("lock:a", OTHER, 10_000);
    const out = await source.poll();
    expect(out.events.map((e) => [e.type, e.owner, e.previousOwner])).toEqual([["owner-changed", OTHER, TOKEN]]);
  });

  it("the clock offset hook raises the skew hazard", async () => {
    const { source, put, only } = setup(5, { clockOffsetMs: { "redis://127.0.0.1:7003/0": 400 } });
    put("lock:a", TOKEN, 10_000, ALL);
    await source.poll();
    const h = only(source.locks()).hazards.find((x) => x.code === "redlock-clock-skew");
    expect(h?.severity).toBe("critical");
    expect(h?.message).toContain("redis://127.0.0.1:7003/0 runs ahead");
    expect(source.health().skew!.skewMs).toBeGreaterThan(390);
  });

  it("hostile key names and values are escaped", async () => {
    const { source, put, only } = setup(3);
    put("lock:\u202e\u0000evil", "\u0007tok\\en", 10_000, [0, 1, 2]);
    await source.poll();
    const lock = only(source.locks());
    expect(lock.resource).toBe("lock:\\u{202e}\\x00evil");
    expect(lock.owner).toBe("\\x07tok\\\\en");
  });

  it("stops following new resources at the limit and says so", async () => {
    const { source, put } = setup(3, { maxResources: 2 });
    for (const k of ["lock:1", "lock:2", "lock:3"]) put(k, TOKEN, 10_000, [0, 1, 2]);
    await source.poll();
    expect(source.locks()).toHaveLength(2);
    expect(source.status().error).toMatch(/resource limit 2/);
  });
});

describe("RedlockSource in track mode (CLIENT TRACKING per node)", () => {
  const nodeId = (i: number) => `redis://127.0.0.1:${7000 + i}/0`;

  /** Every node tracked; records which keys each node is asked to read. */
  function tracked() {
    const t = setup(5, { changeDetection: "track", sweepMs: 60_000 });
    const reads = t.nodes.map(() => [] as string[]);
    t.nodes.forEach((n, i) => {
      const sample = n.sample.bind(n);
      n.sample = (keys, expected, bytes) => {
        reads[i]!.push(...keys.map((k) => k.toString()));
        return sample(keys, expected, bytes);
      };
    });
    t.nodes.forEach((_, i) => t.source.setTracking(nodeId(i), "track"));
    return { ...t, reads, clear: () => reads.forEach((r) => (r.length = 0)) };
  }

  it("reads a quiet lock once, then only when a node announces it or its lease ends", async () => {
    const { source, put, clock, reads, clear } = tracked();
    put("lock:a", TOKEN, 10_000, ALL);
    const first = await source.poll(); // tracking just enabled: every node reads everything once
    expect(first.events.map((e) => e.type)).toEqual(["acquired"]);
    expect(reads.every((r) => r.includes("lock:a"))).toBe(true);
    expect(source.status().changeDetection).toBe("track");
    clear();
    clock.now += 100;
    await source.poll();
    expect(reads.flat()).toEqual([]); // nothing announced, nothing due, the sweep's share under one key

    put("lock:a", OTHER, 10_000, ALL);
    source.invalidated(nodeId(2), [Buffer.from("lock:a")]);
    const changed = await source.poll();
    // Announced by one node, re-read on all five: the quorum view is decided from fresh reads.
    expect(reads.map((r) => r.filter((k) => k === "lock:a").length)).toEqual([1, 1, 1, 1, 1]);
    expect(changed.events.map((e) => e.type)).toEqual(["owner-changed"]);
    clear();

    clock.now += 10_001;
    const ended = await source.poll();
    expect(reads.every((r) => r.includes("lock:a"))).toBe(true);
    expect(ended.events.map((e) => e.type)).toEqual(["expired"]);
    expect(source.locks()).toEqual([]);
  });

  it("polls a node whose tracking is refused in full, and evaluates every lock with the others' last readings", async () => {
    const { source, put, reads, clear, nodes, clock, only } = tracked();
    source.setTracking(nodeId(4), "poll", "CLIENT TRACKING refused: NOPERM (grant +client|tracking)");
    put("lock:a", TOKEN, 30_000, ALL);
    await source.poll();
    clear();
    clock.now += 100;
    // A change only the untracked node can show: the leftover's TTL there, seen by its own poll.
    nodes[4]!.set("lock:a", TOKEN, 60_000);
    await source.poll();
    expect(reads.slice(0, 4).flat()).toEqual([]);
    expect(reads[4]).toEqual(["lock:a"]);
    const lock = only(source.locks());
    expect(lock.quorum).toMatchObject({ votes: 5, state: "held", partial: false });
    expect(lock.quorum!.perNode[4]!.ttlMs).toBe(60_000);
    const s = source.status();
    expect(s.changeDetection).toBe("poll");
    expect(s.note).toMatch(/not live on 1 of 5 nodes.*NOPERM/);
    expect(s.nodes!.map((n) => n.changeDetection)).toEqual(["track", "track", "track", "track", "poll"]);
  });

  it("re-reads everything on a node whose tracking comes back, and after it was silent", async () => {
    const { source, put, reads, clear, nodes, clock } = tracked();
    put("lock:a", TOKEN, 30_000, ALL);
    put("lock:b", OTHER, 30_000, ALL);
    await source.poll();
    clear();
    source.setTracking(nodeId(1), "poll", "the invalidation connection was lost; polling until it is back");
    source.setTracking(nodeId(1), "track");
    clock.now += 100;
    await source.poll();
    expect(reads[1]!.sort()).toEqual(["lock:a", "lock:b"]);
    expect(reads[0]).toEqual([]);
    clear();

    nodes[3]!.failure = new Error("connect ECONNREFUSED");
    await source.poll();
    nodes[3]!.failure = null;
    clear();
    clock.now += 100;
    await source.poll();
    expect(reads[3]!.sort()).toEqual(["lock:a", "lock:b"]);
    expect(reads[0]).toEqual([]);
  });

  it("a force-release reports its own deletion (who, why) even when the nodes' invalidations are refreshed first", async () => {
    const clock = { now: 1_800_000_000_000 };
    const nodes = Array.from({ length: 5 }, () => new FakeNode(clock));
    const pushed: TrackerOutput[] = [];
    let ids = 0;
    const writer = (n: FakeNode, i: number) => ({
      // Each node deletes and announces it on its redirect connection; that refresh runs and is pushed before the
      // deletes' replies are handled (separate connections: either may be read first).
      compareAndDelete: async (key: Buffer) => {
        if (!n.keys.delete(key.toString())) return 0;
        const before = pushed.length;
        source.invalidated(nodeId(i), [key]);
        await waitFor("the announced key refreshed", () => pushed.length > before, { timeoutMs: 2000, intervalMs: 2 });
        return 1;
      },
      purgeFairWaiter: async () => 0,
      deleteIfHashField: async () => 0,
    });
    const source = new RedlockSource(
      nodes.map((port, i) => ({ id: nodeId(i), port, writer: writer(port, i) })),
      {
        group: "orders",
        agentId: "agent-1",
        newId: () => `event-${++ids}`,
        lockPatterns: DEFAULT_LOCK_PATTERNS,
        nodeTimeoutMs: 2000,
        now: () => clock.now,
        changeDetection: "track",
        push: (o) => pushed.push(o),
      },
    );
    try {
      nodes.forEach((_, i) => source.setTracking(nodeId(i), "track"));
      nodes.forEach((n) => n.set("lock:stuck", TOKEN, 60_000));
      await source.poll();
      const lock = source.locks()[0]!;
      const run = await source.release(releaseCommandFor(lock, false));
      expect(run.result.outcome).toBe("released");
      expect(pushed.length).toBeGreaterThan(0);
      expect(pushed.flatMap((o) => o.events)).toEqual([]);
      expect(run.output.events.map((e) => [e.type, e.detail?.reason, e.detail?.by])).toEqual([
        ["released", "force-released", "test"],
      ]);
      expect((await source.poll()).events).toEqual([]);
      expect(source.locks()).toEqual([]);
    } finally {
      source.close();
    }
  });
});

describe("RedlockSource SCAN pacing by each node's server-time budget", () => {
  it("takes SCAN steps on a node only while lockscope's commands there cost under its share", async () => {
    // Each node's own clock of server time: its SCAN steps move it.
    const spent = [0, 0, 0];
    const { source, nodes } = setup(3, {
      discoverByValue: false,
      nodeTimeoutMs: 1000,
      serverTimeBudgetFraction: 0.01,
      budgetClock: (id) => () => spent[Number(/:(\d+)\//.exec(id)![1]) - 7000]!,
    });
    const scans = nodes.map(() => 0);
    nodes.forEach((n, i) => {
      for (let k = 0; k < 100; k++) n.set(`other:${String(k).padStart(3, "0")}`, "x", null);
      // Ten keys a step, each step costing the node 5 ms.
      n.scan = async (cursor: string) => {
        scans[i]!++;
        spent[i]! += 5;
        const all = [...n.keys.keys()].sort();
        const start = Number(cursor);
        const next = start + 10 >= all.length ? "0" : String(start + 10);
        return { cursor: next, keys: all.slice(start, start + 10).map((k) => Buffer.from(k)) };
      };
    });
    await source.poll();
    // 1% of a core: 10 ms of allowance; steps of 5 ms run while any is left, so the third goes 5 ms into debt.
    expect(scans).toEqual([3, 3, 3]);
    await source.poll();
    expect(scans).toEqual([3, 3, 3]); // in debt: no step
    for (let i = 0; i < 3; i++) spent[i]! += 1000; // a second later: 10 ms more, the debt paid, one step's worth left
    await source.poll();
    expect(scans).toEqual([5, 5, 5]);
    // Over a long run a node's steps average out at its 1%: 2 steps of 5 ms per second.
    const before = scans[0]!;
    for (let s = 0; s < 50; s++) {
      for (let i = 0; i < 3; i++) spent[i]! += 1000;
      await source.poll();
    }
    expect(scans[0]! - before).toBeGreaterThanOrEqual(90);
    expect(scans[0]! - before).toBeLessThanOrEqual(110);
    source.close();
  });

  it("without a budget SCAN runs up to the visit limit per poll", async () => {
    const { source, nodes } = setup(3, { scanBudgetPerPoll: 30_000 });
    const scans = nodes.map(() => 0);
    nodes.forEach((n, i) => {
      const scan = n.scan.bind(n);
      n.scan = (cursor, count) => {
        scans[i]!++;
        return scan(cursor, count);
      };
    });
    await source.poll();
    expect(scans).toEqual([1, 1, 1]); // the fake's whole keyspace is one step
  });
});
