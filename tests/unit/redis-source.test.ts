import { describe, expect, it } from "vitest";
import type { KeySample, RedisLockPort } from "../../agent/sources/redis/redis-port";
import { RedisSource } from "../../agent/sources/redis/redis-source";

/** A fake of the narrow port: a map of keys with TTLs, a run id, and a switch to fail every call. */
class FakeRedis implements RedisLockPort {
  keys = new Map<string, { value: string; pttl: number }>();
  runIdValue = "run-1";
  failing: string | null = null;
  scanCalls = 0;
  readonly createdAt = clock;

  async scan(cursor: string, count: number) {
    this.check();
    this.scanCalls++;
    const all = [...this.keys.keys()].sort();
    const start = Number(cursor);
    const page = all.slice(start, start + count);
    const next = start + count >= all.length ? "0" : String(start + count);
    return { cursor: next, keys: page.map((k) => Buffer.from(k)) };
  }

  async sample(keys: Buffer[]): Promise<KeySample[]> {
    this.check();
    return keys.map((key) => {
      const k = this.keys.get(key.toString());
      if (!k) return { key, type: "none", pttl: -2 };
      // TTLs count down with the test clock, as on a real server.
      const pttl = k.pttl < 0 ? k.pttl : Math.max(0, k.pttl - (clock - this.createdAt));
      return { key, type: "string", pttl, string: { prefix: Buffer.from(k.value), length: k.value.length } };
    });
  }

  async numsub(channels: string[]) {
    return channels.flatMap((c) => [c, 0]);
  }

  async runId() {
    this.check();
    return this.runIdValue;
  }

  private check() {
    if (this.failing) throw new Error(this.failing);
  }
}

let clock = Date.parse("2026-01-01T00:00:00Z");
let ids = 0;

function source(fake: FakeRedis, budget = 0, scanCount = 100) {
  return new RedisSource(fake, {
    sourceId: "redis://127.0.0.1:1/0",
    agentId: "a1",
    lockPatterns: ["lock:*"],
    scanCount,
    visitBudgetPerPoll: budget,
    valuePreviewBytes: 64,
    newId: () => `ev-${++ids}-xxxxxx`,
    now: () => clock,
  });
}

describe("RedisSource", () => {
  it("finds lock keys matching the patterns and ignores the rest", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", pttl: 5000 });
    fake.keys.set("cache:b", { value: "x", pttl: -1 });
    const s = source(fake);
    const out = await s.poll();
    expect(out.events.map((e) => [e.type, e.resource])).toEqual([["acquired", "lock:a"]]);
    expect(s.status()).toMatchObject({ up: true, locks: 1 });
  });

  it("reports nothing released while the server is unreachable, and the truth once it is back", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", pttl: 60_000 });
    fake.keys.set("lock:b", { value: "t2", pttl: 60_000 });
    const s = source(fake);
    await s.poll();
    fake.failing = "connect ECONNREFUSED 127.0.0.1:1";
    clock += 1000;
    const during = await s.poll();
    expect(during.events).toEqual([]);
    expect(s.status()).toMatchObject({ up: false, error: "connect ECONNREFUSED 127.0.0.1:1", locks: 2 });
    fake.failing = null;
    fake.keys.delete("lock:b");
    clock += 1000;
    const after = await s.poll();
    expect(after.events.map((e) => [e.type, e.resource])).toEqual([["released", "lock:b"]]);
  });

  it("reports keys that vanished with a server restart as lost", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", pttl: 60_000 });
    const s = source(fake);
    await s.poll();
    fake.keys.clear();
    fake.runIdValue = "run-2";
    clock += 1000;
    const out = await s.poll();
    expect(out.events).toMatchObject([{ type: "lost", detail: { reason: "server-restarted" } }]);
  });

  it("paces discovery by the budget but always makes progress", async () => {
    const fake = new FakeRedis();
    for (let i = 0; i < 50; i++) fake.keys.set(`lock:${String(i).padStart(2, "0")}`, { value: "t", pttl: 60_000 });
    const s = source(fake, 10, 10); // one SCAN of 10 keys per poll
    const first = await s.poll();
    expect(first.events).toHaveLength(10);
    expect(fake.scanCalls).toBe(1);
    let polls = 1;
    while (s.status().locks < 50 && polls < 20) {
      await s.poll();
      polls++;
    }
    expect(s.status().locks).toBe(50);
    expect(polls).toBe(5);
  });

  it("does not track a key that matched but was gone by the time it was read", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t", pttl: 100 });
    const orig = fake.sample.bind(fake);
    fake.sample = async (keys) => {
      fake.keys.clear();
      return orig(keys);
    };
    const s = source(fake);
    expect((await s.poll()).events).toEqual([]);
    expect(s.status().locks).toBe(0);
  });

  it("a poll that read the lock before a force-release does not show it held again after the release", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:stale", { value: "crashed-worker", pttl: -1 });
    const s = source(fake);
    await s.poll();
    const { id, ownerFingerprint } = s.tracker.locks()[0]!;

    // The next poll reads the key, then stalls (a loaded machine) while the operator's release runs.
    const orig = fake.sample.bind(fake);
    let resume!: () => void;
    let stalled!: () => void;
    const reached = new Promise<void>((r) => (stalled = r));
    fake.sample = async (keys) => {
      const before = await orig(keys);
      fake.sample = orig;
      stalled();
      await new Promise<void>((r) => (resume = r));
      return before;
    };
    const polling = s.poll();
    await reached;
    const writer = {
      compareAndDelete: async (key: Buffer) => (fake.keys.delete(key.toString()) ? 1 : 0),
      purgeFairWaiter: async () => 0,
      deleteIfHashField: async () => 0,
    };
    const released = await s.release(
      {
        requestId: "r1",
        lockId: id,
        expectedOwner: "crashed-worker",
        expectedFingerprint: ownerFingerprint!,
        dryRun: false,
        actor: "op",
        reason: "stuck",
      },
      writer,
    );
    expect(released.result.outcome).toBe("released");
    expect(released.output.removed).toEqual([id]);
    resume();

    const late = await polling;
    expect(late.upserts.map((l) => l.id)).not.toContain(id);
    expect(late.events.map((e) => e.type)).toEqual([]);
    expect(s.tracker.locks()).toEqual([]);
    // And the next poll, reading after the release, reports nothing either (no second "released").
    expect((await s.poll()).events).toEqual([]);
  });
});
