import { describe, expect, it } from "vitest";
import type { KeySample, RedisLockPort } from "../../agent/sources/redis/redis-port";
import { RedisSource } from "../../agent/sources/redis/redis-source";
import { ServerTimeBudget } from "../../agent/sources/redis/server-time-budget";
import { releaseCommandFor } from "../harness/release-command";

let clock = Date.parse("2026-01-01T00:00:00Z");

/** A fake of the narrow port with absolute expiry times on the test clock; it counts the keys each read names. */
class FakeRedis implements RedisLockPort {
  keys = new Map<string, { value: string; expiresAt: number | null }>();
  sampled: string[] = [];
  scans = 0;
  failing: string | null = null;
  scanCost = 0;
  /** Server time each key read takes, in ms of the test clock. */
  readCost = 0;

  async scan(cursor: string, count: number) {
    this.check();
    this.scans++;
    clock += this.scanCost;
    const all = [...this.keys.keys()].sort();
    const start = Number(cursor);
    const next = start + count >= all.length ? "0" : String(start + count);
    return { cursor: next, keys: all.slice(start, start + count).map((k) => Buffer.from(k)) };
  }

  async sample(keys: Buffer[]): Promise<KeySample[]> {
    this.check();
    clock += this.readCost * keys.length;
    return keys.map((key) => {
      this.sampled.push(key.toString());
      const k = this.keys.get(key.toString());
      if (!k || (k.expiresAt !== null && k.expiresAt <= clock)) return { key, type: "none", pttl: -2 };
      const pttl = k.expiresAt === null ? -1 : k.expiresAt - clock;
      return { key, type: "string", pttl, string: { prefix: Buffer.from(k.value), length: k.value.length } };
    });
  }

  async numsub(channels: string[]) {
    return channels.flatMap((c) => [c, 0]);
  }

  async runId() {
    this.check();
    return "run-1";
  }

  private check() {
    if (this.failing) throw new Error(this.failing);
  }
}

let ids = 0;
function trackingSource(
  fake: FakeRedis,
  opts: { sweepMs?: number; budget?: ServerTimeBudget; maxHoldMs?: number } = {},
) {
  const s = new RedisSource(fake, {
    sourceId: "redis://127.0.0.1:1/0",
    agentId: "a1",
    lockPatterns: ["lock:*"],
    scanCount: 100,
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    newId: () => `ev-${++ids}-xxxxxx`,
    now: () => clock,
    sweepMs: opts.sweepMs ?? 600_000,
    ...(opts.budget ? { budget: opts.budget } : {}),
    ...(opts.maxHoldMs !== undefined ? { maxHoldMs: opts.maxHoldMs } : {}),
  });
  s.setChangeDetection("track");
  return s;
}

describe("RedisSource in track mode", () => {
  it("reads every known lock once after tracking is enabled, then only what is announced", async () => {
    const fake = new FakeRedis();
    for (let i = 0; i < 5; i++) fake.keys.set(`lock:${i}`, { value: `t${i}`, expiresAt: clock + 60_000 });
    const s = trackingSource(fake);
    expect((await s.poll()).events).toHaveLength(5);
    fake.sampled = [];
    clock += 1000;
    await s.poll();
    expect(fake.sampled).toEqual([]);
    fake.keys.set("lock:2", { value: "t-new", expiresAt: clock + 60_000 });
    const out = await s.refreshNotified([Buffer.from("lock:2")]);
    expect(fake.sampled).toEqual(["lock:2"]);
    expect(out.events.map((e) => [e.type, e.resource, e.detail?.observedBy])).toEqual([
      ["owner-changed", "lock:2", "notification"],
    ]);
    expect(s.status()).toMatchObject({ changeDetection: "track" });
  });

  it("re-reads a lock at its lease end and reports it expired, without waiting for the server's announcement", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", expiresAt: clock + 3000 });
    fake.keys.set("lock:b", { value: "t2", expiresAt: clock + 9000 });
    const s = trackingSource(fake);
    await s.poll();
    expect(s.nextDeadlineMs()).toBe(clock + 3001);
    clock += 2000;
    expect((await s.refreshDue()).events).toEqual([]);
    clock += 1001;
    fake.sampled = [];
    const out = await s.refreshDue();
    expect(fake.sampled).toEqual(["lock:a"]);
    expect(out.events.map((e) => [e.type, e.resource, e.detail?.observedBy])).toEqual([
      ["expired", "lock:a", "lease-end"],
    ]);
    expect(s.nextDeadlineMs()).toBe(clock - 3001 + 9001);
  });

  it("raises held-too-long on quiet locks at the hold limit without re-reading them", async () => {
    const fake = new FakeRedis();
    for (let i = 0; i < 5; i++) fake.keys.set(`lock:${i}`, { value: `t${i}`, expiresAt: null });
    const s = trackingSource(fake, { maxHoldMs: 60_000 });
    await s.poll();
    fake.sampled = [];
    // Every lock of a first read reaches the limit at once: 100,000 forced reads then were minutes of budget debt.
    expect(s.nextDeadlineMs()).toBeNull();
    clock += 61_000;
    expect((await s.refreshDue()).upserts).toEqual([]);
    const out = await s.poll();
    expect(fake.sampled).toEqual([]);
    expect(out.upserts.map((l) => l.hazards.map((h) => h.code))).toEqual(Array(5).fill(["no-ttl", "held-too-long"]));
  });

  it("follows a renewal's new deadline, not the old one", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", expiresAt: clock + 3000 });
    const s = trackingSource(fake);
    await s.poll();
    fake.keys.set("lock:a", { value: "t1", expiresAt: clock + 30_000 });
    await s.refreshNotified([Buffer.from("lock:a")]);
    clock += 3001;
    fake.sampled = [];
    expect((await s.refreshDue()).events).toEqual([]);
    expect(fake.sampled).toEqual([]); // the stale deadline is skipped without a read
  });

  it("sweeps each known lock about once per sweep period, a share per poll", async () => {
    const fake = new FakeRedis();
    for (let i = 0; i < 10; i++) fake.keys.set(`lock:${i}`, { value: `t${i}`, expiresAt: null });
    const s = trackingSource(fake, { sweepMs: 10_000 });
    await s.poll();
    fake.sampled = [];
    for (let p = 0; p < 20; p++) {
      clock += 1000;
      await s.poll();
    }
    const perKey = new Map<string, number>();
    for (const k of fake.sampled) perKey.set(k, (perKey.get(k) ?? 0) + 1);
    expect(perKey.size).toBe(10);
    for (const n of perKey.values()) expect(n).toBeGreaterThanOrEqual(1);
    expect(fake.sampled.length).toBeLessThanOrEqual(20);
  });

  it("a sweep catches a change whose announcement was lost", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", expiresAt: null });
    const s = trackingSource(fake, { sweepMs: 5000 });
    await s.poll();
    fake.keys.set("lock:a", { value: "t2", expiresAt: null });
    const seen: string[] = [];
    for (let p = 0; p < 6; p++) {
      clock += 1000;
      seen.push(...(await s.poll()).events.map((e) => e.type));
    }
    expect(seen).toEqual(["owner-changed"]);
  });

  it("keeps an announced key dirty when its read fails, and reads it on the next poll", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", expiresAt: null });
    const s = trackingSource(fake);
    await s.poll();
    fake.keys.delete("lock:a");
    fake.failing = "connection lost";
    expect((await s.refreshNotified([Buffer.from("lock:a")])).events).toEqual([]);
    expect((await s.poll()).events).toEqual([]);
    fake.failing = null;
    fake.sampled = [];
    const out = await s.poll();
    expect(fake.sampled).toEqual(["lock:a"]);
    expect(out.events.map((e) => e.type)).toEqual(["released"]);
  });

  it("re-reads everything after a FLUSHALL invalidation or when tracking comes back", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:a", { value: "t1", expiresAt: null });
    fake.keys.set("lock:b", { value: "t2", expiresAt: null });
    const s = trackingSource(fake);
    await s.poll();
    fake.keys.clear();
    s.resync();
    expect((await s.poll()).events.map((e) => e.type)).toEqual(["released", "released"]);
    fake.keys.set("lock:c", { value: "t3", expiresAt: null });
    await s.poll();
    fake.sampled = [];
    s.setChangeDetection("poll", "the invalidation connection was lost");
    expect(s.status()).toMatchObject({ changeDetection: "poll", note: "the invalidation connection was lost" });
    await s.poll();
    expect(fake.sampled).toEqual(["lock:c"]); // polling everything meanwhile
    s.setChangeDetection("track");
    fake.sampled = [];
    await s.poll();
    expect(fake.sampled).toEqual(["lock:c"]); // the one re-read after tracking is back
    fake.sampled = [];
    await s.poll();
    expect(fake.sampled).toEqual([]);
  });

  it("paces SCAN by the server-time budget: no step while lockscope's commands cost more than their share", async () => {
    const fake = new FakeRedis();
    for (let i = 0; i < 1000; i++) fake.keys.set(`other:${i}`, { value: "x", expiresAt: null });
    fake.scanCost = 5; // each SCAN step takes 5 ms of the server
    const budget = new ServerTimeBudget(0.01, () => clock);
    const s = trackingSource(fake, { budget });
    await s.poll();
    // 10 ms of burst: steps of 5 ms run while any allowance is left, so the third one goes 5 ms into debt.
    expect(fake.scans).toBe(3);
    await s.poll();
    expect(fake.scans).toBe(3); // in debt: no step
    clock += 1000; // 10 ms more allowance: the debt is paid and two more steps run
    await s.poll();
    expect(fake.scans).toBe(5);
    // Over a long run the steps average out at 1% of the time: 2 steps of 5 ms per second.
    for (let i = 0; i < 100; i++) {
      clock += 1000;
      await s.poll();
    }
    expect(fake.scans).toBeGreaterThanOrEqual(5 + 195);
    expect(fake.scans).toBeLessThanOrEqual(5 + 205);
  });

  it("keeps half the budget for SCAN when sweeping every known lock once a minute would cost all of it", async () => {
    const fake = new FakeRedis();
    // 6,000 quiet locks at 0.1 ms a read: a sweep each minute is 10 ms a second, the whole 1% budget.
    for (let i = 0; i < 6000; i++) fake.keys.set(`lock:${i}`, { value: `t${i}`, expiresAt: null });
    for (let i = 0; i < 4000; i++) fake.keys.set(`other:${i}`, { value: "x", expiresAt: null });
    const budget = new ServerTimeBudget(0.01, () => clock);
    const s = trackingSource(fake, { sweepMs: 60_000, budget });
    // Discovery, unpaced here (the locks sort first, so they are all known after the first steps).
    s.setChangeDetection("poll");
    while (s.tracker.size < 6000) await s.poll();
    s.setChangeDetection("track");
    await s.poll(); // the one re-read after tracking is enabled
    fake.readCost = 0.1;
    fake.scanCost = 0.5;
    const scans0 = fake.scans;
    const spent0 = budget.spentMs;
    fake.sampled = [];
    const t0 = clock;
    for (let i = 0; i < 200; i++) {
      clock += 1000;
      await s.poll();
    }
    const wallS = (clock - t0) / 1000;
    const scanMs = (fake.scans - scans0) * 0.5;
    const sweepMs = fake.sampled.length * 0.1;
    // Together within the 1% (10 ms a second), the sweep within its half, and the SCAN given the rest.
    expect((budget.spentMs - spent0) / wallS).toBeLessThan(10.5);
    expect(sweepMs / wallS).toBeLessThan(5.5);
    expect(scanMs / wallS).toBeGreaterThan(4);
    // The sweep still goes round every lock, in about twice its minute.
    const sweepPass = s.status().lastSweepMs!;
    expect(sweepPass).toBeGreaterThan(90_000);
    expect(sweepPass).toBeLessThan(180_000);
  });

  it("a force-release reports its own deletion, with who and why, even when the delete's invalidation is read first", async () => {
    const fake = new FakeRedis();
    fake.keys.set("lock:stuck", { value: "crashed-worker", expiresAt: null });
    const s = trackingSource(fake);
    await s.poll();
    const lock = s.tracker.locks()[0]!;
    let announced: Awaited<ReturnType<RedisSource["refreshNotified"]>> | undefined;
    const writer = {
      // The server deletes, announces the key on the redirect connection, and that refresh runs before the
      // delete's own reply is handled (two connections: either may be read first).
      compareAndDelete: async (key: Buffer) => {
        fake.keys.delete(key.toString());
        announced = await s.refreshNotified([key]);
        return 1;
      },
      purgeFairWaiter: async () => 0,
      deleteIfHashField: async () => 0,
    };
    const run = await s.release(releaseCommandFor(lock, false), writer);
    expect(run.result.outcome).toBe("released");
    expect(announced!.events).toEqual([]);
    expect(run.output.events.map((e) => [e.type, e.detail?.reason, e.detail?.by])).toEqual([
      ["released", "force-released", "test"],
    ]);
    expect((await s.poll()).events).toEqual([]);
  });
});
