import { describe, expect, it } from "vitest";
import type { KeySample, RedisLockPort } from "../../agent/sources/redis/redis-port";
import { RedisSource } from "../../agent/sources/redis/redis-source";
import { CommandCosts, ServerTimeBudget } from "../../agent/sources/redis/server-time-budget";

let clock = Date.parse("2026-01-01T00:00:00Z");

const REDISSON_FIELD = "8743c9c0-0795-4907-87fd-6c719a6b4586:57";

/**
 * A fake of the narrow port on a loaded agent host: every reply arrives `replyMs` after the call (the agent waited
 * for a core), while the server's own account (INFO commandstats) says each command took a few microseconds.
 */
class LoadedRedis implements RedisLockPort {
  strings = new Map<string, string>();
  hashes = new Map<string, string>();
  /** Keys `key:0000000`… after the others, never stored: a large keyspace of keys that are not locks. */
  virtualKeys = 0;
  replyMs = 60;
  scans = 0;
  infos = 0;
  /** Commands the server has run and would list in commandstats (a fresh server lists none). */
  readonly ran = new Set<string>();
  /** What each call of a command costs the server now, in µs. */
  usec: Record<string, number> = { scan: 8, type: 0.5, pttl: 0.5, "pubsub|numsub": 2 };
  /** When set, a SCAN step costs this much per key asked (its COUNT) instead of usec.scan a call. */
  scanUsecPerKey: number | null = null;
  /** The COUNT of each SCAN step. */
  readonly counts: number[] = [];
  /** The server's totals per command (a command marked as run before the test starts has ten calls). */
  private readonly totals = new Map<string, { calls: number; usec: number }>();

  /** The server's own account of a command so far, in ms. */
  serverMs(command: string): number {
    return (this.totals.get(command)?.usec ?? 0) / 1000;
  }

  private account(command: string, calls: number, usec = calls * this.usec[command]!): void {
    this.ran.add(command);
    const t = this.totals.get(command) ?? { calls: 0, usec: 0 };
    t.calls += calls;
    t.usec += usec;
    this.totals.set(command, t);
  }

  async scan(cursor: string, count: number) {
    this.account("scan", 1, this.scanUsecPerKey === null ? undefined : count * this.scanUsecPerKey);
    this.scans++;
    this.counts.push(count);
    clock += this.replyMs;
    const all = [...this.strings.keys(), ...this.hashes.keys()].sort();
    const total = all.length + this.virtualKeys;
    const start = Number(cursor);
    const next = start + count >= total ? "0" : String(start + count);
    const names: string[] = [];
    for (let i = start; i < Math.min(total, start + count); i++)
      names.push(i < all.length ? all[i]! : `key:${String(i - all.length).padStart(7, "0")}`);
    return { cursor: next, keys: names.map((k) => Buffer.from(k)) };
  }

  async sample(keys: Buffer[]): Promise<KeySample[]> {
    this.account("type", keys.length);
    this.account("pttl", keys.length);
    clock += this.replyMs;
    return keys.map((key) => {
      const k = key.toString();
      const field = this.hashes.get(k);
      if (field !== undefined)
        return {
          key,
          type: "hash",
          pttl: 30_000,
          hash: { length: 1, fields: [[Buffer.from(field), Buffer.from("1")]] },
        };
      const v = this.strings.get(k);
      if (v === undefined) return { key, type: "none", pttl: -2 };
      return { key, type: "string", pttl: 60_000, string: { prefix: Buffer.from(v), length: v.length } };
    });
  }

  async numsub(channels: string[]) {
    this.account("pubsub|numsub", 1);
    clock += this.replyMs;
    return channels.flatMap((c) => [c, 0]);
  }

  async runId() {
    return "run-1";
  }

  async commandStats() {
    this.infos++;
    for (const c of this.ran) if (!this.totals.has(c)) this.account(c, 10);
    const lines = [...this.totals].map(
      ([c, t]) =>
        `cmdstat_${c}:calls=${t.calls},usec=${Math.round(t.usec)},usec_per_call=${(t.usec / t.calls).toFixed(2)}`,
    );
    return ["# Commandstats", ...lines, ""].join("\r\n");
  }
}

let ids = 0;
function source(fake: LoadedRedis, budget: ServerTimeBudget, scanStepUsec?: number) {
  const s = new RedisSource(fake, {
    sourceId: "redis://127.0.0.1:1/0",
    agentId: "a1",
    lockPatterns: ["*lock*"],
    scanCount: 1000,
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    newId: () => `ev-${++ids}-xxxxxx`,
    now: () => clock,
    sweepMs: 600_000,
    budget,
    ...(scanStepUsec !== undefined ? { scanStepUsec } : {}),
  });
  s.setChangeDetection("track");
  return s;
}

/** 1,000,000 keys on a server that has accounted for them: a SCAN COUNT 1000 step costs it 0.8 ms (stack.md). */
function largeKeyspace() {
  const fake = new LoadedRedis();
  fake.replyMs = 5;
  fake.virtualKeys = 1_000_000;
  fake.usec.scan = 800;
  fake.ran.add("scan").add("type").add("pttl");
  const budget = new ServerTimeBudget(0.01, () => clock);
  return { fake, s: source(fake, budget) };
}

/** Polls every 250 ms, `polls` times; returns the time that passed. */
async function pollEvery250ms(s: RedisSource, polls: number): Promise<number> {
  const t0 = clock;
  for (let i = 0; i < polls; i++) {
    clock += 250;
    await s.poll();
  }
  return clock - t0;
}

/** Polls every 250 ms (as the e2e agent does) until `key` is reported acquired; returns how many polls it took. */
async function pollsUntilFound(s: RedisSource, key: string, max = 200): Promise<number> {
  for (let n = 1; n <= max; n++) {
    clock += 250;
    const out = await s.poll();
    if (out.events.some((e) => e.type === "acquired" && e.resource === key)) return n;
  }
  return Infinity;
}

describe("the SCAN pace under CPU contention", () => {
  it("finds a new key on a small keyspace within one poll although every reply takes 60 ms (Redisson NUMSUB each poll)", async () => {
    const fake = new LoadedRedis();
    for (let i = 0; i < 40; i++) fake.strings.set(`filler:${i}`, "x");
    fake.hashes.set("app:redisson-lock", REDISSON_FIELD);
    const budget = new ServerTimeBudget(0.01, () => clock);
    const s = source(fake, budget);
    expect(await pollsUntilFound(s, "app:redisson-lock")).toBe(1);
    for (let i = 0; i < 5; i++) {
      // The Redisson lock is renewed between polls: its re-read and PUBSUB NUMSUB (waiters) come every poll.
      await s.refreshNotified([Buffer.from("app:redisson-lock")]);
      clock += 4000;
      await s.poll();
    }
    fake.strings.set("e2e:lock:checkout", "tok");
    // Charged at their reply times, 60 ms a NUMSUB would be 6 s of a 1% budget each, and no SCAN step would run.
    expect(await pollsUntilFound(s, "e2e:lock:checkout")).toBe(1);
    // What was charged is what the server says it spent, a small share of the 1%.
    expect(budget.spentMs).toBeLessThan(5);
  });

  it("refunds the reply times of a fresh server's first pass once the server has accounted for them", async () => {
    const fake = new LoadedRedis();
    for (let i = 0; i < 40; i++) fake.strings.set(i % 4 === 0 ? `app:lock:${i}` : `filler:${i}`, "x");
    const budget = new ServerTimeBudget(0.01, () => clock);
    const s = source(fake, budget);
    // The first INFO comes before the first SCAN: nothing is known, so the pass is charged its reply times.
    await pollsUntilFound(s, "app:lock:0");
    expect(budget.spentMs).toBeGreaterThanOrEqual(120);
    expect(budget.allows()).toBe(false);
    fake.strings.set("e2e:lock:new", "tok");
    // INFO is read again within a second (not ten): the overcharge is given back and the next step finds the key.
    const polls = await pollsUntilFound(s, "e2e:lock:new");
    expect(polls).toBeLessThanOrEqual(5);
    expect(fake.infos).toBe(2);
    expect(budget.spentMs).toBeLessThan(1);
  });

  it("keeps a large keyspace's pass within 1% of the server when the server's account is the true cost", async () => {
    const { fake, s } = largeKeyspace();
    const elapsedMs = await pollEvery250ms(s, 240);
    const stepMs = (800 * 1.2 + 1) / 1000;
    // 1% of a minute is 600 ms of server time, plus the 10 ms burst and at most one step of overdraft.
    expect(fake.scans * stepMs).toBeLessThanOrEqual(0.01 * elapsedMs + 10 + stepMs);
    expect(fake.scans * stepMs).toBeGreaterThan(0.009 * elapsedMs);
    expect(s.status().lastScanAt).toBeUndefined(); // 1,000 steps a pass: paced, not done in a minute
  });

  it("slows the pass down when the server's steps start to cost more than the last account said", async () => {
    const { fake, s } = largeKeyspace();
    const run = async (polls: number) => {
      const ms0 = fake.serverMs("scan");
      const elapsedMs = await pollEvery250ms(s, polls);
      return { elapsedMs, scanMs: fake.serverMs("scan") - ms0 };
    };
    await run(40);
    // The server now shares its cores: each step takes it twice as long by its own account. Charged at the old
    // rate until the next read, the pass would take 2% of it; settled and re-estimated within a second, it keeps 1%.
    fake.usec.scan = 1600;
    const { elapsedMs, scanMs } = await run(240);
    // 1% of the minute, the 10 ms burst, and the part charged at the old rate before the read: about a second's
    // allowance at most (10 ms) counted at half its cost, and one step of overdraft.
    expect(scanMs).toBeLessThanOrEqual(0.01 * elapsedMs + 10 + 10 + 2);
    expect(scanMs).toBeGreaterThan(0.009 * elapsedMs);
  });
});

describe("the size of a paced SCAN step (REDIS_SCAN_STEP_US)", () => {
  /** 1,000,000 keys on a server where a step costs 4 µs a key asked: a COUNT 1000 step is 4 ms (10 M keys, paced). */
  function coldKeyspace(scanStepUsec?: number) {
    const fake = new LoadedRedis();
    fake.replyMs = 1;
    fake.virtualKeys = 1_000_000;
    fake.scanUsecPerKey = 4;
    fake.ran.add("type").add("pttl");
    const budget = new ServerTimeBudget(0.01, () => clock);
    return { fake, budget, s: source(fake, budget, scanStepUsec) };
  }

  it("sizes each step's COUNT to about the target once the server has accounted for a step, within the same budget", async () => {
    const sized = coldKeyspace(250);
    const elapsedMs = await pollEvery250ms(sized.s, 240);
    // The first steps ask for 250 keys (about 1 µs a key until known: 1 ms each here); then 250 / 4 = 62.
    expect(sized.fake.counts[0]).toBe(250);
    const last = sized.fake.counts.slice(-20);
    expect(new Set(last)).toEqual(new Set([62]));
    expect(sized.s.status().scanStepCount).toBe(62);
    // The server's time for SCAN stays within 1% of the minute (plus the 10 ms burst and one step of overdraft)…
    const scanMs = sized.fake.serverMs("scan");
    expect(scanMs).toBeLessThanOrEqual(0.01 * elapsedMs + 10 + 1);
    // …and the pass moves on at nearly the pace of COUNT 1000 steps: the same server time, in smaller pieces.
    const fixed = coldKeyspace();
    await pollEvery250ms(fixed.s, 240);
    expect(new Set(fixed.fake.counts)).toEqual(new Set([1000]));
    const keys = (f: LoadedRedis) => f.counts.reduce((a, b) => a + b, 0);
    expect(keys(sized.fake)).toBeGreaterThan(0.85 * keys(fixed.fake));
    expect(keys(sized.fake)).toBeLessThan(1.15 * keys(fixed.fake));
  });

  it("asks for SCAN_COUNT when the budget is unlimited, and never less than 10 keys", async () => {
    const unlimited = new LoadedRedis();
    unlimited.virtualKeys = 5000;
    unlimited.scanUsecPerKey = 4;
    const s = source(unlimited, new ServerTimeBudget(0, () => clock), 250);
    await pollEvery250ms(s, 3);
    expect(new Set(unlimited.counts)).toEqual(new Set([1000]));

    const c = new CommandCosts();
    expect(c.scanCountFor(250, 1000)).toBeUndefined(); // nothing known yet
    c.update("cmdstat_scan:calls=10,usec=80000,usec_per_call=8000.00\r\n"); // 8 µs a key at COUNT 1000
    expect(c.scanCountFor(250, 1000)).toBe(31);
    expect(c.scanCountFor(40, 1000)).toBe(10);
    expect(c.scanCountFor(1_000_000, 1000)).toBe(1000);
  });
});

describe("CommandCosts", () => {
  it("estimates PUBSUB NUMSUB (Redis 7 and 6 names) and EVALSHA from commandstats", () => {
    const c = new CommandCosts();
    expect(c.estimateMs("numsub", 1)).toBeUndefined();
    c.update(
      "cmdstat_pubsub|numsub:calls=4,usec=20,usec_per_call=5.00\r\ncmdstat_evalsha:calls=2,usec=30,usec_per_call=15.00\r\n",
    );
    expect(c.estimateMs("numsub", 2)).toBeCloseTo((2 * (5 * 1.2 + 1)) / 1000);
    expect(c.estimateMs("fingerprint", 3)).toBeCloseTo((3 * (15 + 1)) / 1000);
    c.update("cmdstat_pubsub:calls=4,usec=12,usec_per_call=3.00\r\n");
    expect(c.estimateMs("numsub", 1)).toBeCloseTo((3 * 1.2 + 1) / 1000);
  });

  it("settles reply times charged for want of an account, once, and lets what it cannot account for stand", () => {
    const c = new CommandCosts();
    // Two SCAN COUNT 1000 steps (SCAN is charged per key asked, one step a call).
    c.charged("scan", 1000, 25, true);
    c.charged("scan", 1000, 25, true);
    c.charged("read", 10, 30, true);
    c.charged("numsub", 1, 0.001, true); // charged less than the account: the difference is charged as well
    expect(c.awaiting(10)).toBe(true);
    const correction = c.update(
      "cmdstat_scan:calls=2,usec=20,usec_per_call=10.00\r\ncmdstat_type:calls=10,usec=5,usec_per_call=0.50\r\n" +
        "cmdstat_pttl:calls=10,usec=5,usec_per_call=0.50\r\ncmdstat_pubsub|numsub:calls=1,usec=4,usec_per_call=4.00\r\n",
    );
    expect(correction).toBeCloseTo(
      (2 * (10 * 1.2 + 1)) / 1000 - 50 + (10 * (2 * 1 + 4)) / 1000 - 30 + (4 * 1.2 + 1) / 1000 - 0.001,
    );
    expect(c.awaiting(10)).toBe(false);
    expect(c.update("")).toBe(0);
    c.charged("fingerprint", 1, 20, true);
    expect(c.update("cmdstat_scan:calls=2,usec=20,usec_per_call=10.00\r\n")).toBe(0); // no EVALSHA line: it stands
    expect(c.awaiting(10)).toBe(false);
  });

  it("estimates from the last interval's time per call and settles what it charged at that interval's rate", () => {
    const c = new CommandCosts();
    const stats = (calls: number, usec: number) =>
      `cmdstat_scan:calls=${calls},usec=${usec},usec_per_call=${(usec / calls).toFixed(2)}\r\n`;
    const step = (usec: number) => (usec * 1.2 + 1) / 1000;
    c.update(stats(100, 80_000));
    expect(c.scanMs()).toBeCloseTo(step(800));
    // 50 steps charged at 800 µs while the server spent 1,600 µs on each (it waited for a core inside them).
    for (let i = 0; i < 50; i++) c.charged("scan", 1000, c.scanMs()!, false);
    expect(c.awaiting(10)).toBe(true); // 48 ms charged since the read: more than a second's 10 ms allowance
    expect(c.update(stats(150, 160_000))).toBeCloseTo(50 * (step(1600) - step(800)));
    expect(c.scanMs()).toBeCloseTo(step(1600)); // the interval's rate, not the 1,067 µs average since the start
    // An interval of fewer than ten calls is too noisy to go by: the average since the start stands for it.
    for (let i = 0; i < 3; i++) c.charged("scan", 1000, step(1600), false);
    expect(c.update(stats(153, 160_000 + 3 * 100))).toBeCloseTo(3 * step(160_300 / 153) - 3 * step(1600));
    expect(c.scanMs()).toBeCloseTo(step(160_300 / 153));
    // CONFIG RESETSTAT: fewer calls than at the last read; the new totals are the interval.
    c.update(stats(20, 10_000));
    expect(c.scanMs()).toBeCloseTo(step(500));
    expect(c.awaiting(10)).toBe(false);
  });

  it("charges SCAN per key asked: a smaller step at the rate per call of the steps the server last accounted for", () => {
    const c = new CommandCosts();
    const stats = (calls: number, usec: number) =>
      `cmdstat_scan:calls=${calls},usec=${usec},usec_per_call=${(usec / calls).toFixed(2)}\r\n`;
    c.update(stats(100, 80_000)); // 800 µs a step, taken to be COUNT 1000 steps
    expect(c.scanMs(250)).toBeCloseTo((800 * 1.2 * 0.25 + 1) / 1000);
    // Twenty steps of COUNT 100 charged at that estimate; the server says they took 120 µs each.
    for (let i = 0; i < 20; i++) c.charged("scan", 100, c.scanMs(100)!, false);
    const correction = c.update(stats(120, 80_000 + 20 * 120));
    expect(correction).toBeCloseTo((20 * (120 * 1.2 + 1) - 20 * (80 * 1.2 + 1)) / 1000);
    // Now 1.2 µs a key asked: a COUNT 250 step is 300 µs, and a 250 µs step asks for 208 keys.
    expect(c.scanMs(250)).toBeCloseTo((300 * 1.2 + 1) / 1000);
    expect(c.scanCountFor(250, 1000)).toBe(208);
  });

  it("gives a refund back to the budget, never beyond one second's allowance", () => {
    const t = 0;
    const b = new ServerTimeBudget(0.01, () => t);
    b.spend(80);
    expect(b.allows()).toBe(false);
    b.refund(79.9);
    expect(b.allows()).toBe(true);
    expect(b.spentMs).toBeCloseTo(0.1);
    b.refund(1000);
    b.spend(10.5);
    expect(b.allows()).toBe(false); // the refund did not buy more than the 10 ms burst
  });
});
