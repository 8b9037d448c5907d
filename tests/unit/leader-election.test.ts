import { describe, expect, it } from "vitest";
import { staleRemoteAgents } from "../../lib/server/fanout";
import { LEADER_KEY, LeaderElection, leaderLockSnapshot, type LeaderRedis } from "../../lib/server/leader";

/** The four commands the election uses, over one key with a lease, on a clock the test moves. */
class FakeRedis {
  value: string | null = null;
  expiresAt = 0;
  down = false;
  constructor(readonly clock: { t: number }) {}
  private live() {
    if (this.value !== null && this.clock.t >= this.expiresAt) this.value = null;
  }
  private check() {
    if (this.down) throw new Error("connect ECONNREFUSED 127.0.0.1:6390");
  }
  async set(key: string, value: string, _px: "PX", ms: number, _nx: "NX") {
    this.check();
    this.live();
    expect(key).toBe(LEADER_KEY);
    if (this.value !== null) return null;
    this.value = value;
    this.expiresAt = this.clock.t + ms;
    return "OK";
  }
  async eval(script: string, _n: number, _key: string, id: string, ms?: string) {
    this.check();
    this.live();
    if (this.value !== id) return 0;
    if (script.includes("PEXPIRE")) this.expiresAt = this.clock.t + Number(ms);
    else this.value = null;
    return 1;
  }
  async get() {
    this.live();
    return this.value;
  }
  async pttl() {
    this.live();
    return this.value === null ? -2 : this.expiresAt - this.clock.t;
  }
}

function election(redis: FakeRedis, id: string, clock: { t: number }, changes: boolean[] = []) {
  return new LeaderElection(redis as unknown as LeaderRedis, id, {
    leaseMs: 3000,
    log: () => undefined,
    onChange: (l) => changes.push(l),
    now: () => clock.t,
  });
}

describe("LeaderElection", () => {
  it("lets exactly one of two dashboards lead, and keeps it there while it renews", async () => {
    const clock = { t: 0 };
    const redis = new FakeRedis(clock);
    const a = election(redis, "A", clock);
    const b = election(redis, "B", clock);
    expect(await a.step()).toBe(true);
    expect(await b.step()).toBe(false);
    for (let i = 0; i < 10; i++) {
      clock.t += 1000; // a third of the lease
      expect(await a.step()).toBe(true);
      expect(await b.step()).toBe(false);
    }
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
  });

  it("hands over once a dead leader's lease has run out, not before", async () => {
    const clock = { t: 0 };
    const redis = new FakeRedis(clock);
    const a = election(redis, "A", clock);
    const changes: boolean[] = [];
    const b = election(redis, "B", clock, changes);
    await a.step();
    // A dies here: it never renews again.
    clock.t = 2999;
    expect(await b.step()).toBe(false);
    clock.t = 3000;
    expect(await b.step()).toBe(true);
    expect(changes).toEqual([true]);
    expect(await redis.get()).toBe("B");
  });

  it("steps down when its lease cannot be renewed, before another can take over", async () => {
    const clock = { t: 0 };
    const redis = new FakeRedis(clock);
    const changes: boolean[] = [];
    const a = election(redis, "A", clock, changes);
    await a.step();
    redis.down = true;
    clock.t = 1000;
    expect(await a.step()).toBe(false);
    expect(a.isLeader()).toBe(false);
    expect(changes).toEqual([true, false]);
  });

  it("is no longer leader once the lease it last renewed has passed, even between steps (a paused process)", async () => {
    const clock = { t: 0 };
    const a = election(new FakeRedis(clock), "A", clock);
    await a.step();
    clock.t = 2999;
    expect(a.isLeader()).toBe(true);
    clock.t = 3000;
    expect(a.isLeader()).toBe(false);
  });

  it("never renews a lease another dashboard took after ours ran out", async () => {
    const clock = { t: 0 };
    const redis = new FakeRedis(clock);
    const a = election(redis, "A", clock);
    const b = election(redis, "B", clock);
    await a.step();
    clock.t = 3500;
    await b.step();
    expect(await a.step()).toBe(false);
    expect(await redis.get()).toBe("B");
  });

  it("resigns on stop, so the other takes over at once", async () => {
    const clock = { t: 0 };
    const redis = new FakeRedis(clock);
    const a = election(redis, "A", clock);
    const b = election(redis, "B", clock);
    await a.step();
    await a.stop();
    expect(await b.step()).toBe(true);
  });
});

describe("the leader lock in the dashboards' own view", () => {
  it("is a lock held by the leader with its remaining lease, or no lock when nobody leads", () => {
    const s = leaderLockSnapshot({ holder: "dash-1", ttlMs: 1800 }, "fanout:redis://127.0.0.1:6390", "t0", "t1");
    expect(s.locks).toEqual([
      expect.objectContaining({ id: "lockscope-leader", resource: LEADER_KEY, owner: "dash-1", ttlMs: 1800 }),
    ]);
    expect(leaderLockSnapshot({ holder: null, ttlMs: null }, "s", "t0", "t1").locks).toEqual([]);
  });
});

describe("staleRemoteAgents", () => {
  it("names remote agents unheard of for longer than the limit, never local ones", () => {
    const heard = new Map([
      ["fresh", 9000],
      ["stale", 1000],
      ["local-now", 1000],
    ]);
    expect(staleRemoteAgents(heard, (id) => id === "local-now", 12_000, 10_000)).toEqual(["stale"]);
    expect(staleRemoteAgents(heard, () => false, 11_000, 10_000)).toEqual([]);
  });
});
