import { describe, expect, it } from "vitest";
import type { KeySample, RedisLockPort } from "../../agent/sources/redis/redis-port";
import { RedisSource } from "../../agent/sources/redis/redis-source";

let clock = Date.parse("2026-01-01T00:00:00Z");

type Value =
  | { type: "string"; v: string }
  | { type: "hash"; v: Array<[string, string]> }
  | { type: "list"; v: string[] }
  | { type: "zset"; v: Array<[string, number]> };

/**
 * A fake of the narrow port with strings, hashes, lists and sorted sets on the test clock. It logs what each call
 * named: `sample` (the full read), `resample` (the sweep's cheap re-read) and `exists` (one group per call).
 */
class FakeRedis implements RedisLockPort {
  keys = new Map<string, Value & { expiresAt: number | null }>();
  sampled: string[] = [];
  resampled: string[] = [];
  existsGroups: string[][] = [];
  existsFails = false;

  private live(key: string) {
    const k = this.keys.get(key);
    return k && (k.expiresAt === null || k.expiresAt > clock) ? k : undefined;
  }

  private read(key: Buffer): KeySample {
    const k = this.live(key.toString());
    if (!k) return { key, type: "none", pttl: -2 };
    const pttl = k.expiresAt === null ? -1 : k.expiresAt - clock;
    const b = (x: string) => Buffer.from(x);
    if (k.type === "string") return { key, type: "string", pttl, string: { prefix: b(k.v), length: k.v.length } };
    if (k.type === "hash")
      return { key, type: "hash", pttl, hash: { length: k.v.length, fields: k.v.map(([f, v]) => [b(f), b(v)]) } };
    if (k.type === "list") return { key, type: "list", pttl, list: { length: k.v.length, items: k.v.map(b) } };
    return { key, type: "zset", pttl, zset: { length: k.v.length, members: k.v.map(([m, s]) => [b(m), s]) } };
  }

  async scan(cursor: string, count: number) {
    const all = [...this.keys.keys()].sort();
    const start = Number(cursor);
    const next = start + count >= all.length ? "0" : String(start + count);
    return { cursor: next, keys: all.slice(start, start + count).map((k) => Buffer.from(k)) };
  }

  async sample(keys: Buffer[]): Promise<KeySample[]> {
    return keys.map((key) => {
      this.sampled.push(key.toString());
      return this.read(key);
    });
  }

  async resample(keys: Buffer[], types: readonly string[]): Promise<Array<KeySample | null>> {
    return keys.map((key, i) => {
      this.resampled.push(key.toString());
      const s = this.read(key);
      // The bounded read of another type fails with WRONGTYPE; PTTL -2 for a gone key.
      if (s.type === "none") return { key, type: types[i]!, pttl: -2 };
      return s.type === types[i] ? s : null;
    });
  }

  /** Optional in the port: a test sets it to undefined for a port without it. */
  countExisting?: (groups: Buffer[][]) => Promise<Array<number | null>> = async (groups) =>
    groups.map((g) => {
      this.existsGroups.push(g.map(String));
      return this.existsFails ? null : g.filter((k) => this.live(k.toString()) !== undefined).length;
    });

  async numsub(channels: string[]) {
    return channels.flatMap((c) => [c, 0]);
  }

  async runId() {
    return "run-1";
  }
}

const SWEEP_MS = 10_000;
const HOLDER = "3f2504e0-4f89-41d3-9a0c-0305e82c3301:42";
const WAITER = "6ba7b810-9dad-41d1-80b4-00c04fd430c8:7";
const REDISSON = "orderLock:1";
const QUEUE = `redisson_lock_queue:{${REDISSON}}`;
const TIMEOUT = `redisson_lock_timeout:{${REDISSON}}`;
const LEGACY = "legacy:1";
const PERMITS = `{${LEGACY}}:timeout`;
const PLAIN = "orderLock:plain";

function seed(fake: FakeRedis): void {
  fake.keys.set(REDISSON, { type: "hash", v: [[HOLDER, "1"]], expiresAt: clock + 600_000 });
  fake.keys.set(LEGACY, { type: "string", v: "1", expiresAt: null });
  fake.keys.set(PLAIN, { type: "string", v: "token-1", expiresAt: clock + 600_000 });
}

let ids = 0;
/** A track-mode source that has read every lock once and started its sweep clock. */
/** The source under test on the fake server (the lock patterns are not the companions' names: see swept). */
function sourceOn(fake: FakeRedis, sweepMs?: number, lockPatterns = ["orderLock:*", "legacy:*"]): RedisSource {
  return new RedisSource(fake, {
    sourceId: "redis://127.0.0.1:1/0",
    agentId: "a1",
    lockPatterns,
    scanCount: 100,
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    newId: () => `ev-${++ids}-xxxxxx`,
    now: () => clock,
    ...(sweepMs === undefined ? {} : { sweepMs }),
  });
}

async function swept(fake: FakeRedis): Promise<RedisSource> {
  // Not the companions' names in the patterns: only the sweep can see them appear (SCAN would name their owner).
  const s = sourceOn(fake, SWEEP_MS);
  s.setChangeDetection("track");
  expect((await s.poll()).events.map((e) => e.resource).sort()).toEqual([LEGACY, REDISSON, PLAIN].sort());
  // The full read covered the companions too (none exists): by one EXISTS per lock, or by reading them.
  for (const c of [QUEUE, TIMEOUT, PERMITS])
    expect(fake.existsGroups.flat().includes(c) || fake.sampled.includes(c)).toBe(true);
  await s.poll(); // starts the sweep's clock
  fake.sampled = [];
  fake.resampled = [];
  fake.existsGroups = [];
  return s;
}

/** One sweep period later: every lock is due once. */
async function sweepOnce(s: RedisSource) {
  clock += SWEEP_MS;
  return s.poll();
}

describe("the sweep of locks with companion keys", () => {
  it("re-reads a quiet Redisson lock and a `SETNX … 1` lock cheaply, with one EXISTS of their companions each", async () => {
    const fake = new FakeRedis();
    seed(fake);
    const s = await swept(fake);
    const out = await sweepOnce(s);
    expect(out.events).toEqual([]);
    expect(fake.sampled).toEqual([]); // no full read: no TYPE, length, nor TYPE + PTTL of each companion
    expect(fake.resampled.sort()).toEqual([LEGACY, REDISSON, PLAIN].sort());
    expect(fake.existsGroups).toHaveLength(2);
    expect(fake.existsGroups).toEqual(expect.arrayContaining([[PERMITS], [QUEUE, TIMEOUT]]));
  });

  it("a companion that appeared unannounced sends its lock to the full read, which shows it", async () => {
    const fake = new FakeRedis();
    seed(fake);
    const s = await swept(fake);
    fake.keys.set(QUEUE, { type: "list", v: [WAITER], expiresAt: null });
    fake.keys.set(TIMEOUT, { type: "zset", v: [[WAITER, clock + 60_000]], expiresAt: null });
    fake.keys.set(PERMITS, { type: "zset", v: [["p".repeat(16), clock + 60_000]], expiresAt: null });
    const out = await sweepOnce(s);
    expect(fake.sampled).toEqual(expect.arrayContaining([REDISSON, LEGACY, QUEUE, TIMEOUT, PERMITS]));
    expect(fake.sampled).not.toContain(PLAIN);
    const upsert = (r: string) => out.upserts.find((u) => u.resource === r);
    expect(upsert(REDISSON)?.waiters).toHaveLength(1);
    expect(upsert(LEGACY)?.rule).toBe("redisson-permit-expirable-semaphore");

    // Now that companions exist, EXISTS cannot vouch for their content (another waiter, the same count): full reads,
    // whose own EXISTS of the companions counts them and so reads them.
    fake.sampled = [];
    fake.existsGroups = [];
    await sweepOnce(s);
    expect(fake.sampled).toEqual(expect.arrayContaining([REDISSON, LEGACY, QUEUE, TIMEOUT, PERMITS]));
  });

  it("a lock whose own value changed is read fully, its companions asked afresh", async () => {
    const fake = new FakeRedis();
    seed(fake);
    const s = await swept(fake);
    fake.keys.set(REDISSON, { type: "hash", v: [[HOLDER, "2"]], expiresAt: clock + 600_000 });
    await sweepOnce(s);
    expect(fake.sampled).toEqual([REDISSON]);
    // The sweep's check of the quiet lock's companions, then the full read's of the changed lock's (none exists).
    expect(fake.existsGroups).toEqual([[PERMITS], [QUEUE, TIMEOUT]]);
  });

  it("the full read of a new lock counts its companions with one EXISTS, reads those that exist, and shows them", async () => {
    const fake = new FakeRedis();
    seed(fake);
    fake.keys.set(QUEUE, { type: "list", v: [WAITER], expiresAt: null });
    fake.keys.set(TIMEOUT, { type: "zset", v: [[WAITER, clock + 60_000]], expiresAt: null });
    const s = sourceOn(fake);
    const out = await s.poll();
    expect(fake.existsGroups).toEqual(expect.arrayContaining([[QUEUE, TIMEOUT], [PERMITS]]));
    expect(fake.existsGroups).toHaveLength(2);
    // The Redisson lock's queue and timeouts exist: read. The permit semaphore's lease set does not: not read.
    expect(fake.sampled).toEqual(expect.arrayContaining([QUEUE, TIMEOUT]));
    expect(fake.sampled).not.toContain(PERMITS);
    expect(out.upserts.find((u) => u.resource === REDISSON)?.waiters).toHaveLength(1);
  });

  it("a queue the SCAN pass finds itself folds into its lock, recognised during the pass as after it", async () => {
    const views: string[][] = [];
    // Unlimited (locks recognised batch by batch during the pass) and paced (everything after the pass).
    for (const serverTimeBudgetFraction of [0, 1]) {
      const fake = new FakeRedis();
      seed(fake);
      fake.keys.set(QUEUE, { type: "list", v: [WAITER], expiresAt: null });
      fake.keys.set(TIMEOUT, { type: "zset", v: [[WAITER, clock + 60_000]], expiresAt: null });
      const s = new RedisSource(fake, {
        sourceId: "redis://127.0.0.1:1/0",
        agentId: "a1",
        lockPatterns: ["orderLock:*", "legacy:*", "redisson_lock_queue:*"],
        scanCount: 100,
        visitBudgetPerPoll: 0,
        valuePreviewBytes: 64,
        newId: () => "ev",
        now: () => clock,
        serverTimeBudgetFraction,
      });
      const out = await s.poll();
      expect(out.upserts.map((u) => u.resource).sort()).toEqual([LEGACY, REDISSON, PLAIN].sort());
      views.push(out.upserts.map((u) => JSON.stringify([u.resource, u.rule, u.owner, u.waiters, u.hazards])).sort());
    }
    expect(views[0]).toEqual(views[1]);
    expect(views[0]!.find((v) => v.includes(REDISSON))).toContain(WAITER.slice(0, 8));
  });

  it("when EXISTS fails, or the port has none, such locks are read fully", async () => {
    for (const fake of [
      Object.assign(new FakeRedis(), { existsFails: true }),
      Object.assign(new FakeRedis(), { countExisting: undefined }),
    ]) {
      seed(fake);
      const s = await swept(fake);
      await sweepOnce(s);
      expect(fake.sampled).toEqual(expect.arrayContaining([REDISSON, LEGACY, QUEUE, TIMEOUT, PERMITS]));
      expect(fake.sampled).not.toContain(PLAIN);
    }
  });
});

describe("a Redisson fair lock's queue that appears after the lock was first read", () => {
  it("is folded into the lock when the SCAN finds it (the tracked lock is read with it), not listed on its own", async () => {
    const fake = new FakeRedis();
    fake.keys.set(REDISSON, { type: "hash", v: [[HOLDER, "1"]], expiresAt: clock + 600_000 });
    // The companions' names match a pattern too, as with the default `*lock*`.
    const s = sourceOn(fake, undefined, ["orderLock:*", "redisson_lock_*"]);
    s.setChangeDetection("track");
    expect((await s.poll()).events.map((e) => `${e.type} ${e.resource}`)).toEqual([`acquired ${REDISSON}`]);
    // Redisson writes the queue and the waiters' deadlines after the lock, here between two polls.
    fake.keys.set(QUEUE, { type: "list", v: [WAITER], expiresAt: null });
    fake.keys.set(TIMEOUT, { type: "zset", v: [[WAITER, clock + 60_000]], expiresAt: null });
    await s.poll();
    expect(s.tracker.locks().map((l) => l.resource)).toEqual([REDISSON]);
    expect(s.tracker.locks()[0]!.waiters.map((w) => w.owner)).toEqual([WAITER]);
  });
});

describe("a Redisson fair lock whose own name matches no pattern, released and taken again", () => {
  it("is read again when announced, or found by the SCAN through its companions, which stayed known", async () => {
    const fake = new FakeRedis();
    const take = () => {
      fake.keys.set(REDISSON, { type: "hash", v: [[HOLDER, "1"]], expiresAt: clock + 30_000 });
      fake.keys.set(QUEUE, { type: "list", v: [WAITER], expiresAt: null });
      fake.keys.set(TIMEOUT, { type: "zset", v: [[WAITER, clock + 60_000]], expiresAt: null });
    };
    take();
    // As the demo's `shipping:label-printer` with the default `*lock*`: only the companions' names match.
    const s = sourceOn(fake, undefined, ["redisson_lock_*"]);
    s.setChangeDetection("track");
    expect((await s.poll()).events.map((e) => `${e.type} ${e.resource}`)).toEqual([`acquired ${REDISSON}`]);
    // Released: the three keys deleted at once, and announced (client tracking names every key that was read).
    for (const k of [REDISSON, QUEUE, TIMEOUT]) fake.keys.delete(k);
    const released = await s.refreshNotified([REDISSON, QUEUE, TIMEOUT].map((k) => Buffer.from(k)));
    expect(released.events.map((e) => `${e.type} ${e.resource}`)).toEqual([`released ${REDISSON}`]);
    // Taken again, and announced (the agent read its name when it went): neither known any more nor a pattern's,
    // but its queue is known, so the announcement is enough.
    clock += 3000;
    take();
    const announced = await s.refreshNotified([Buffer.from(REDISSON)]);
    expect(announced.events.map((e) => `${e.type} ${e.resource}`)).toEqual([`acquired ${REDISSON}`]);
    expect(s.tracker.locks().map((l) => l.resource)).toEqual([REDISSON]);
    expect(s.tracker.locks()[0]!.waiters.map((w) => w.owner)).toEqual([WAITER]);
    // Released and taken again with the announcement lost: the SCAN finds it through its known companions.
    for (const k of [REDISSON, QUEUE, TIMEOUT]) fake.keys.delete(k);
    await s.refreshNotified([REDISSON, QUEUE, TIMEOUT].map((k) => Buffer.from(k)));
    expect(s.tracker.locks()).toEqual([]);
    clock += 3000;
    take();
    const scanned = await s.poll();
    expect(scanned.events.map((e) => `${e.type} ${e.resource}`)).toEqual([`acquired ${REDISSON}`]);
    expect(s.tracker.locks()[0]!.waiters.map((w) => w.owner)).toEqual([WAITER]);
  });
});
