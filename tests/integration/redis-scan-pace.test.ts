import { afterEach, describe, expect, it } from "vitest";
import { startRedis, type RedisServer } from "../harness/redis";
import { startInProcessAgent, type InProcessAgent } from "../harness/in-process-agent";
import { waitFor } from "../harness/ports";

/**
 * The paced SCAN at the default 1% server-time budget against a real redis-server: on a small keyspace a new key
 * under no BCAST prefix is found within about one poll, also while a renewed Redisson lock makes every poll send
 * PUBSUB NUMSUB (whose reply time, charged as such on a loaded machine, used to starve the pass for 20 s and
 * more); on a large keyspace the pass stays within the budget by the server's own account.
 */
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function server(): Promise<RedisServer> {
  const r = await startRedis();
  cleanup.push(() => r.stop());
  return r;
}

async function agent(url: string, scanStepUsec?: number): Promise<InProcessAgent> {
  const a = await startInProcessAgent(url, {
    changeDetection: "track",
    pollIntervalMs: 250,
    budgetPercent: 1,
    ...(scanStepUsec !== undefined ? { scanStepUsec } : {}),
  });
  cleanup.push(() => a.stop());
  return a;
}

/** usec spent by the server per command, from INFO commandstats. */
function usecByCommand(info: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([a-z|_-]+):calls=\d+,usec=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

describe("the paced SCAN at a 1% server-time budget", () => {
  it("finds a new key under no BCAST prefix on a small keyspace within about one poll", async () => {
    const r = await server();
    const c = r.client();
    cleanup.push(() => c.disconnect());
    for (let i = 0; i < 40; i++) await c.set(`filler:${i}`, "x");
    // Exactly what Redisson writes for a held RLock, renewed by its watchdog while the test runs.
    const redisson = "app:redisson-lock";
    await c.hset(redisson, "8743c9c0-0795-4907-87fd-6c719a6b4586:57", "1");
    await c.pexpire(redisson, 30_000);
    const renew = setInterval(() => void c.pexpire(redisson, 30_000).catch(() => undefined), 200);
    cleanup.push(() => clearInterval(renew));
    const a = await agent(r.url);
    await waitFor("the Redisson lock", () => a.types(redisson).includes("acquired"));
    await waitFor("tracking live", () => a.loop.statuses()[0]!.changeDetection === "track");
    // The server's account of the first pass is read about a second after it: 8 polls (2 s) later it is known.
    const warm = a.loop.polls + 8;
    await waitFor("eight more polls", () => a.loop.polls >= warm);
    const pollsTaken: number[] = [];
    for (let i = 0; i < 6; i++) {
      const key = `e2e:lock:pace-${i}`;
      const before = a.loop.polls;
      await c.set(key, `token-${i}`, "PX", 60_000);
      await waitFor(`${key} found`, () => a.types(key).includes("acquired"), { timeoutMs: 30_000, intervalMs: 10 });
      pollsTaken.push(a.loop.polls - before);
    }
    // The poll in flight when the key was written may have scanned before it: the next one finds it.
    expect(
      pollsTaken.every((n) => n <= 2),
      `polls taken: ${pollsTaken.join(", ")}`,
    ).toBe(true);
  });

  it("keeps a large keyspace's SCAN pass within the budget by the server's own account", async () => {
    const r = await server();
    const c = r.client();
    cleanup.push(() => c.disconnect());
    await c.call("DEBUG", "POPULATE", "200000", "filler", "16");
    await c.config("RESETSTAT");
    const t0 = Date.now();
    const a = await agent(r.url);
    const start = a.loop.polls;
    await waitFor("24 polls (6 s)", () => a.loop.polls >= start + 24, { timeoutMs: 60_000 });
    const usec = usecByCommand(await c.info("commandstats"));
    const elapsedMs = Date.now() - t0;
    const scanMs = (usec.get("scan") ?? 0) / 1000;
    expect(scanMs).toBeGreaterThan(0); // the pass moves on
    // 1% of the elapsed time plus the 10 ms burst, one step of overdraft (a COUNT 1000 step is about 1 ms), and
    // what the server's account of the steps since the agent last read it adds to their estimate: the agent reads it
    // every second while the budget binds, and a second's 10 ms allowance counted at half the cost is 10 ms more
    // (on a loaded machine the server waits for a core inside a step, and counts it: 80.4 ms against 72.8 once,
    // before the agent settled its charges with the account).
    expect(scanMs).toBeLessThanOrEqual(0.01 * elapsedMs + 10 + 5 + 10);
    // Unpaced, 200 steps of about 1 ms would finish the pass in the first poll.
    expect(a.loop.statuses()[0]!.lastScanAt).toBeUndefined();
  });

  it("sizes each paced SCAN step to about REDIS_SCAN_STEP_US of the server's time (SLOWLOG's account of each step)", async () => {
    const r = await server();
    const c = r.client();
    cleanup.push(() => c.disconnect());
    await c.call("DEBUG", "POPULATE", "200000", "filler", "16");
    // Every command into the slow log, with its arguments and the server's time for it.
    await c.config("SET", "slowlog-log-slower-than", "0");
    await c.config("SET", "slowlog-max-len", "100000");
    const a = await agent(r.url, 100);
    await waitFor("the steps sized", () => (a.loop.statuses()[0]!.scanStepCount ?? 1000) < 1000, {
      timeoutMs: 30_000,
    });
    await c.call("SLOWLOG", "RESET");
    const start = a.loop.polls;
    await waitFor("12 more polls (3 s)", () => a.loop.polls >= start + 12, { timeoutMs: 60_000 });
    const entries = (await c.call("SLOWLOG", "GET", "100000")) as Array<[number, number, number, Buffer[]]>;
    const steps = entries
      .map(([, , usec, args]) => ({ usec, name: String(args[0]).toLowerCase(), count: stepCount(args) }))
      .filter((e) => e.name === "scan");
    expect(steps.length).toBeGreaterThan(5);
    const counts = new Set(steps.map((s) => s.count));
    // About 1 µs a key here: 100 µs steps ask for tens to a few hundred keys, not 1,000.
    expect(Math.max(...counts)).toBeLessThan(1000);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(10);
    // The server's time for the median step is near the target (a loaded machine makes some steps slower).
    const usec = steps.map((s) => s.usec).sort((x, y) => x - y);
    expect(usec[Math.floor(usec.length / 2)]!).toBeLessThan(300);
  });
});

/** The COUNT argument of a SCAN in the slow log. */
function stepCount(args: Buffer[]): number {
  const i = args.findIndex((a) => String(a).toUpperCase() === "COUNT");
  return i < 0 ? Number.NaN : Number(String(args[i + 1]));
}
