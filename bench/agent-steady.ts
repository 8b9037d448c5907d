/**
 * The agent's steady state at many locks, in one process: the real Redis backend (as agent/main.ts builds it) and
 * the real AgentLoop, with the events dropped instead of sent, against a redis-server of its own holding the bench's
 * lock mix (BENCH_REDIS_SCALE=10: 100,000 locks) and 10,000 filler keys. It waits until every lock is tracked and
 * SETTLE_S more, then over STEADY_S prints the process's CPU, the watched server's calls per command, and the heap
 * after a full collection. Lighter than `--only=tracking` (no dashboard, no operations, about 5 minutes at 100,000
 * locks) and meant for A/B runs of agent changes (run it in two checkouts in turn):
 *
 *   BENCH_REDIS_SCALE=10 flock /tmp/lockscope-heavy.lock node --expose-gc --trace-gc --max-semi-space-size=2 \
 *     --heap-growing-percent=50 --import tsx bench/agent-steady.ts
 *
 * The node flags are the agent's own (agent/node-flags.ts, lib/runtime/heap-growth.ts); --trace-gc shows the
 * collections, between the printed window marks (ms since the process started, the trace's clock).
 * Over the window it also prints the collector's pauses (the `gc` performance entries: how many, the longest, how
 * many over 25 ms), the event loop's longest delay and its p99, and the RSS sampled every 10 s (lowest, highest,
 * last): what a V8 flag does to the agent's tail and memory over a long window (STEADY_S=3600).
 * Optional: REDIS_SERVER_TIME_BUDGET_PERCENT (default the agent's 0.7), CPU_PROFILE=<file> (a CPU profile of the
 * window, which starts at the "window start" mark: the stalls are timed on the marks' clock), HEAP_SNAPSHOT=<file>
 * (after the window), HEAP_SAMPLING=<file> (a sampling heap profile of the window's allocations still in the heap
 * at its end, before the full collection: open it in Chrome DevTools' Memory tab; with HEAP_SAMPLING_YOUNG=1 also
 * what the young generation collected, i.e. every allocation of the window: the garbage rate and who makes it).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { writeHeapSnapshot } from "node:v8";
import { Redis } from "ioredis";
import { AgentLoop } from "../agent/agent";
import { loadAgentConfig } from "../agent/config";
import { newEventId } from "../agent/core/event-id";
import { redisBackend } from "../agent/sources/redis/redis-backend";
import { startRedis } from "../tests/harness/redis";
import { seedKeyspace, TOTAL_LOCKS } from "./seed-keyspace";
import { sleep } from "./support/stats";

const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;
const seconds = (name: string, fallback: number) => Number(process.env[name] ?? fallback) * 1000;

async function commandCalls(c: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of (await c.info("commandstats")).matchAll(/^cmdstat_([a-z0-9|_-]+):calls=(\d+)/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
}

async function main(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with node --expose-gc");
  const server = await startRedis();
  const admin = new Redis(server.url);
  await seedKeyspace(admin, TOTAL_LOCKS + 10_000);
  const env = {
    ...process.env,
    REDIS_URLS: server.url,
    DASHBOARD_URL: "http://127.0.0.1:9",
    AGENT_TOKEN: "x".repeat(32),
  };
  const config = loadAgentConfig(env);
  const log = (line: string) => console.log(`agent ${line}`);
  const backend = redisBackend.create(redisBackend.load(env, config.file)!, {
    agent: config,
    newId: newEventId,
    log,
    push: () => undefined,
    pollSoon: () => undefined,
  });
  await backend.ready;
  const loop = new AgentLoop(
    backend.sources,
    { publish: () => undefined },
    {
      agentId: "bench",
      pollIntervalMs: config.pollIntervalMs,
      log,
    },
  );
  loop.start();
  const started = performance.now();
  while (loop.locks().length < TOTAL_LOCKS && performance.now() - started < 900_000) await sleep(1000);
  console.log(
    `tracked ${loop.locks().length} of ${TOTAL_LOCKS} after ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  await sleep(seconds("SETTLE_S", 30));

  const session = new Session();
  session.connect();
  if (process.env.CPU_PROFILE) {
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  }
  // Allocations of the window still in the heap at its end: what survived the young generation (the old
  // generation's garbage since its last full collection, and anything the window added for good).
  if (process.env.HEAP_SAMPLING) {
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 16384,
      includeObjectsCollectedByMajorGC: true,
      // HEAP_SAMPLING_YOUNG=1: also what the young generation collected (all the window's allocations: the garbage
      // rate, which sets how often the scavenger runs)
      includeObjectsCollectedByMinorGC: process.env.HEAP_SAMPLING_YOUNG === "1",
    });
  }
  console.log(`window start ${performance.now().toFixed(0)}`);
  const pauses = { count: 0, ms: 0, longest: 0 };
  let majors = 0;
  const long: string[] = [];
  const gcs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      pauses.count++;
      pauses.ms += e.duration;
      pauses.longest = Math.max(pauses.longest, e.duration);
      const major = (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
      if (major) majors++;
      if (e.duration > 25)
        long.push(`${major ? "full" : "other"} ${e.duration.toFixed(0)} ms at ${e.startTime.toFixed(0)}`);
    }
  });
  gcs.observe({ entryTypes: ["gc"] });
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const rss: number[] = [];
  const rssTimer = setInterval(() => rss.push(process.memoryUsage().rss), 10_000);
  // When the loop was held (a 10 ms timer late by more than 50 ms): to line up with the agent's log and a profile.
  const stalls: string[] = [];
  let tick = performance.now();
  const stallTimer = setInterval(() => {
    const now = performance.now();
    if (now - tick > 60) stalls.push(`${(now - tick - 10).toFixed(0)} ms at ${tick.toFixed(0)}`);
    tick = now;
  }, 10);
  const calls0 = await commandCalls(admin);
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  await sleep(seconds("STEADY_S", 60));
  clearInterval(rssTimer);
  clearInterval(stallTimer);
  delay.disable();
  gcs.disconnect();
  const cpu = process.cpuUsage(cpu0);
  const windowS = (performance.now() - w0) / 1000;
  const calls1 = await commandCalls(admin);
  console.log(`window end ${performance.now().toFixed(0)}`);
  if (process.env.CPU_PROFILE) {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(process.env.CPU_PROFILE, JSON.stringify(profile));
  }
  if (process.env.HEAP_SAMPLING) {
    const { profile } = await session.post("HeapProfiler.getSamplingProfile");
    writeFileSync(process.env.HEAP_SAMPLING, JSON.stringify(profile));
  }
  const rates = [...calls1]
    .map(([cmd, n]) => [cmd, (n - (calls0.get(cmd) ?? 0)) / windowS] as const)
    .filter(([, r]) => r >= 0.5)
    .map(([cmd, r]) => `${cmd} ${r.toFixed(0)}`);
  console.log(
    `agent CPU ${((cpu.user + cpu.system) / 1e4 / windowS).toFixed(1)}% of a core over ${windowS.toFixed(0)} s`,
  );
  console.log(`calls/s on the server (commands called by scripts included): ${rates.join(", ")}`);
  console.log(
    `collector: ${pauses.count} pauses (${majors} full), longest ${pauses.longest.toFixed(1)} ms, ` +
      `${long.length} over 25 ms${long.length ? ` (${long.slice(0, 20).join(", ")})` : ""}, ` +
      `${pauses.ms.toFixed(0)} ms in all; ` +
      `event loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, longest ${(delay.max / 1e6).toFixed(1)} ms`,
  );
  console.log(
    `event loop held over 50 ms: ${stalls.length} times${stalls.length ? `: ${stalls.slice(0, 30).join(", ")}` : ""}`,
  );
  if (rss.length > 0)
    console.log(
      `RSS every 10 s: lowest ${mb(Math.min(...rss))}, highest ${mb(Math.max(...rss))}, last ${mb(rss.at(-1)!)}`,
    );
  gc();
  const m = process.memoryUsage();
  console.log(`after a full collection: heap used ${mb(m.heapUsed)}, heap total ${mb(m.heapTotal)}, RSS ${mb(m.rss)}`);
  if (process.env.HEAP_SNAPSHOT) console.log(`heap snapshot ${writeHeapSnapshot(process.env.HEAP_SNAPSHOT)}`);
  loop.stop();
  await backend.close();
  admin.disconnect();
  await server.stop();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
