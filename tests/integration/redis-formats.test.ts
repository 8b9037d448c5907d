import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Mutex, Semaphore } from "redis-semaphore";
import Redlock from "redlock";
import type { EventsResponse, HealthResponse } from "../../lib/contract/api";
import type { Lock } from "../../lib/contract/lock";
import type { RedisServer } from "../harness/redis";
import { startRedisStack, stopStack, waitFor, type Dashboard, type Proc } from "../harness/stack";

let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;

beforeAll(async () => {
  ({ redis, dashboard, agent } = await startRedisStack({ agentEnv: { POLL_INTERVAL_MS: "200" } }));
  await waitFor("agent watching", async () =>
    (await dashboard.get<HealthResponse>("/api/health")).sources.some((s) => s.up),
  );
});

afterAll(() => stopStack({ redis, dashboard, agent }));

const lua = (name: string) => readFileSync(path.join(import.meta.dirname, "..", "fixtures", "redisson", name), "utf8");

async function lockFor(resource: string, ready: (l: Lock) => boolean = () => true): Promise<Lock> {
  let found: Lock | undefined;
  await waitFor(`${resource} as expected`, async () => {
    found = (await dashboard.allLocks()).locks.find((l) => l.resource === resource);
    return found !== undefined && ready(found);
  }).catch((err: unknown) => {
    throw new Error(`${String(err)}; last seen: ${JSON.stringify(found)}`);
  });
  return found!;
}

describe("locks made by real client libraries", () => {
  it("redis-semaphore Mutex and Semaphore", async () => {
    const c = redis.client();
    const mutex = new Mutex(c, "reports", { lockTimeout: 10_000, refreshInterval: 0 });
    await mutex.acquire();
    const m = await lockFor("mutex:reports");
    expect(m).toMatchObject({ library: "redis-semaphore", rule: "redis-semaphore-mutex", ttlMs: expect.any(Number) });
    expect(m.owner).toMatch(/^[0-9a-f-]{36}$/);
    await mutex.release();

    const a = new Semaphore(c, "pool", 2, { lockTimeout: 10_000, refreshInterval: 0 });
    const b = new Semaphore(c, "pool", 2, { lockTimeout: 10_000, refreshInterval: 0 });
    await a.acquire();
    await b.acquire();
    const s = await lockFor(
      "semaphore:pool",
      (l) => l.holder?.members === 2 || l.holder?.holders === 2 || l.valuePreview?.includes(",") === true,
    );
    expect(s.library).toBe("redis-semaphore");
    await a.release();
    await b.release();
  });

  it("node-redlock on a single instance", async () => {
    const redlock = new Redlock([redis.client()], { retryCount: 0 });
    const lock = await redlock.acquire(["redlock-single:lock:payout"], 10_000);
    const l = await lockFor("redlock-single:lock:payout");
    expect(l.owner).toBe(lock.value);
    // read on one node, not as a Redlock group: the label says so (the Redlock backend shows configured groups)
    expect(l.library).toBe("node-redlock (single node)");
    expect(l.backend).toBe("redis");
    await lock.release();
  });

  it("a Redisson lock through Redisson's own Lua: holder, re-entry, waiters, watchdog renewals, then renewals stopped", async () => {
    const c = redis.client();
    const acquire = lua("lock-1.lua");
    const renew = lua("renew-1.lua");
    const unlock = lua("unlock-2.lua");
    const name = "orders:lock:order-17";
    const holder = "8743c9c0-0795-4907-87fd-6c719a6b4586:57";
    expect(await c.eval(acquire, 1, name, 3000, holder)).toBeNull();
    expect(await c.eval(acquire, 1, name, 3000, holder)).toBeNull(); // re-entered
    // The watchdog renews the lease every third of it, as Redisson's does (3 s lease here, 30 s by default).
    const watchdog = setInterval(() => void c.eval(renew, 1, name, 3000, holder), 1000);
    try {
      // Another JVM's thread waits: Redisson subscribes to the lock's channel and sleeps.
      const waiter = redis.client();
      await waiter.subscribe(`redisson_lock__channel:{${name}}`);
      const l = await lockFor(name, (x) => x.waiters.length > 0);
      expect(l).toMatchObject({ library: "redisson", rule: "redisson-lock", owner: holder });
      expect(l.holder).toMatchObject({ clientId: "8743c9c0-0795-4907-87fd-6c719a6b4586", thread: 57, reentrant: 2 });
      expect(l.waiters[0]!.detail).toMatch(/1 client connection/);
      // Renewals are seen as such: the TTL keeps jumping back up, and no hazard is raised while they go on.
      const types = async () =>
        (await dashboard.get<EventsResponse>(`/api/events?resource=${encodeURIComponent(name)}`)).events.map(
          (e) => e.type,
        );
      await waitFor("renewals recorded", async () => (await types()).filter((t) => t === "renewed").length >= 2);
      expect(await types()).toContain("acquired");
      expect((await lockFor(name)).hazards.map((h) => h.code)).not.toContain("renewals-stopped");
    } finally {
      clearInterval(watchdog);
    }
    // ... then the JVM dies: renewals stop, and the lock is flagged before it expires.
    await lockFor(name, (x) => x.hazards.some((h) => h.code === "renewals-stopped"));

    // Still held (re-entered twice): the first unlock only decrements, the second frees it and wakes the waiter.
    expect(await c.eval(unlock, 2, name, `redisson_lock__channel:{${name}}`, 0, 3000, holder)).toBe(0);
    expect(await c.eval(unlock, 2, name, `redisson_lock__channel:{${name}}`, 0, 3000, holder)).toBe(1);
    await waitFor("gone", async () => !(await dashboard.allLocks()).locks.some((x) => x.resource === name));
  });

  it("ShedLock and redis-py values are decoded", async () => {
    const c = redis.client();
    await c.set("job-lock:default:nightly-report", "ADDED:2026-11-29T03:10:00.123Z@batch-host-7", "PX", 60_000);
    const shed = await lockFor("job-lock:default:nightly-report");
    expect(shed).toMatchObject({ library: "shedlock" });
    expect(shed.holder).toMatchObject({ host: "batch-host-7", lockName: "nightly-report" });

    // redis-py's default token: uuid1().hex, and by default no timeout at all.
    await c.set("lock:py:import", "6f1c2b3ab0d611ef9a7e0242ac120002");
    const py = await lockFor("lock:py:import");
    expect(py.library).toBe("redis-py");
    expect(py.holder?.acquiredAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(py.hazards.map((h) => h.code)).toEqual(expect.arrayContaining(["no-ttl", "redis-py-no-timeout"]));
  });
});
