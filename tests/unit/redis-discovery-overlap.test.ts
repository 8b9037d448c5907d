import { describe, expect, it } from "vitest";
import type { KeySample, RedisLockPort } from "../../agent/sources/redis/redis-port";
import { RedisSource } from "../../agent/sources/redis/redis-source";

/**
 * A fake of the narrow port that answers each call on a later turn of the event loop, as a server would, and logs
 * the order of calls: "scan <n>" when SCAN step n is sent, "sample <first key>" when a read is sent, and how many
 * reads were in flight at most.
 */
class SlowFake implements RedisLockPort {
  readonly log: string[] = [];
  private steps = 0;
  private reading = 0;
  maxReading = 0;

  constructor(private readonly keys: Map<string, string>) {}

  private later<T>(value: () => T): Promise<T> {
    return new Promise((resolve) => setImmediate(() => resolve(value())));
  }

  scan(cursor: string, count: number) {
    this.log.push(`scan ${++this.steps}`);
    const all = [...this.keys.keys()].sort();
    const start = Number(cursor);
    const next = start + count >= all.length ? "0" : String(start + count);
    return this.later(() => ({ cursor: next, keys: all.slice(start, start + count).map((k) => Buffer.from(k)) }));
  }

  async sample(keys: Buffer[]): Promise<KeySample[]> {
    this.log.push(`sample ${keys[0]!.toString()}`);
    this.reading++;
    this.maxReading = Math.max(this.maxReading, this.reading);
    const out = await this.later(() =>
      keys.map((key): KeySample => {
        const v = this.keys.get(key.toString());
        if (v === undefined) return { key, type: "none", pttl: -2 };
        return { key, type: "string", pttl: 60_000, string: { prefix: Buffer.from(v), length: v.length } };
      }),
    );
    this.reading--;
    return out;
  }

  async numsub(channels: string[]) {
    return channels.flatMap((c) => [c, 0]);
  }

  async runId() {
    return "run-1";
  }
}

/** 1,000 lock keys among 1,000 others; every tenth lock holds "1" (a semaphore count: it has a companion key). */
function keyspace(): Map<string, string> {
  const keys = new Map<string, string>();
  for (let i = 0; i < 1000; i++) {
    keys.set(`lock:${String(i).padStart(4, "0")}`, i % 10 === 0 ? "1" : `token-${i}-0123456789abcdef`);
    keys.set(`cache:${String(i).padStart(4, "0")}`, "x");
  }
  return keys;
}

function source(fake: SlowFake, serverTimeBudgetFraction: number) {
  let ids = 0;
  return new RedisSource(fake, {
    sourceId: "redis://127.0.0.1:1/0",
    agentId: "a1",
    lockPatterns: ["lock:*"],
    scanCount: 100,
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    newId: () => `ev-${++ids}`,
    now: () => Date.parse("2026-01-01T00:00:00Z"),
    serverTimeBudgetFraction,
  });
}

const lastScan = (log: string[]) => log.findLastIndex((l) => l.startsWith("scan"));

describe("RedisSource full discovery with an unlimited budget", () => {
  it("reads new keys and their companions while the SCAN pass goes on, at most 2 reads at once", async () => {
    const fake = new SlowFake(keyspace());
    const out = await source(fake, 0).poll();
    expect(out.events).toHaveLength(1000);
    // Three batches of 250 locks are read before the pass's last step, each followed by its locks' companions
    // ({lock:0000}:timeout ...: one for each tenth lock) as soon as it is read; after the last step, only the last
    // batch (closed by the end of the pass) and its companions.
    expect(fake.log.slice(0, lastScan(fake.log)).filter((l) => l.startsWith("sample"))).toEqual([
      "sample lock:0000",
      "sample {lock:0000}:timeout",
      "sample lock:0250",
      "sample {lock:0250}:timeout",
      "sample lock:0500",
    ]);
    expect(fake.log.slice(lastScan(fake.log) + 1)).toEqual([
      "sample {lock:0500}:timeout",
      "sample lock:0750",
      "sample {lock:0750}:timeout",
    ]);
    expect(fake.maxReading).toBeLessThanOrEqual(2);
  });

  it("sends each SCAN step before matching the keys of the step before", async () => {
    const fake = new SlowFake(keyspace());
    await source(fake, 0).poll();
    // Steps 1 to 10 are the cache: keys (sorted first), steps 11 to 20 the locks, 100 each: the first batch of 250
    // is full while step 13's keys are matched, and by then step 14 is already on its way.
    const first = fake.log.findIndex((l) => l.startsWith("sample"));
    expect(fake.log.slice(0, first).filter((l) => l.startsWith("scan"))).toHaveLength(14);
  });

  it("reports the same events as a paced source that reads after the pass", async () => {
    const overlapped = new SlowFake(keyspace());
    const paced = new SlowFake(keyspace());
    // 100% of a core: never short, but a paced source (reads after the pass, one at a time).
    const a = await source(overlapped, 0).poll();
    const b = await source(paced, 1).poll();
    const view = (o: typeof a) =>
      o.events.map((e) => [e.type, e.resource, e.owner, e.lockId, e.library, e.ttlMs, JSON.stringify(e.detail)]);
    expect(view(a)).toEqual(view(b));
    expect(a.upserts.map((l) => l.id)).toEqual(b.upserts.map((l) => l.id));
    // The paced source read nothing before its pass ended.
    expect(paced.log.slice(0, lastScan(paced.log)).some((l) => l.startsWith("sample"))).toBe(false);
    expect(paced.maxReading).toBe(1);
  });
});
