/**
 * 6. Change detection, side by side in one run: the real agent process in `poll` mode (today's pacing) and in
 * `track` mode (CLIENT TRACKING, default server-time budget) against the same 1,000,000-key server with 10,000
 * locks and `notify-keyspace-events ""`. Per mode: commands/s to the watched Redis and its CPU share in steady
 * state, the agent's CPU and peak RSS, another client's GET p99, and event latency (renewal, owner change,
 * release; lease end to `expired`) measured at a viewer of the dashboard.
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import type { Redis } from "ioredis";
import type { LockEvent } from "../lib/contract/lock";
import { DEFAULT_SERVER_TIME_BUDGET_PERCENT, parseRedisTarget } from "../agent/config";
import type { RedisServer } from "../tests/harness/redis";
import { startAgent, type Dashboard } from "../tests/harness/stack";
import type { Cleanup } from "./support/cleanup";
import { withGetLoop } from "./support/get-loop-client";
import { holdingHeavyLock } from "./support/heavy-lock";
import { ensureAgentBundle } from "./support/agent-bundle";
import { infoNumber, parseCommandStats, redisCpuSeconds } from "./support/redis-stats";
import { cpuSeconds, memoryKb, scriptProcess } from "./support/processes";
import { verdict, type Row, type SectionResult } from "./support/result";
import { epochMs, mb, ms, p50p99, seconds, sleep, summarize, type Summary } from "./support/stats";
import type { UiViewer } from "./support/ui-socket";

/** The textbook release an application runs (the agent's own compare-and-delete guards a fingerprint instead). */
const APP_RELEASE = {
  numberOfKeys: 1,
  lua: 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end',
};

const STEADY_MS = 30_000;
const GET_WINDOW_MS = 10_000;
/**
 * Paired windows: the agent's process running and stopped (SIGSTOP) in turn, in the order running, stopped,
 * stopped, running, and again (ABBA twice), PAIRED_WINDOW_MS each with PAIRED_SETTLE_MS before each left out: once
 * for the watched server's CPU, then once with the GET loop for another client's latency. The machine's load
 * drifts over a run (the one-off "no agent" baseline above was taken minutes earlier); alternating windows put both
 * sides under the same drift. Short enough that the dashboard does not count a stopped agent as gone.
 */
const PAIRED_ORDER = ["running", "stopped", "stopped", "running", "running", "stopped", "stopped", "running"] as const;
const PAIRED_WINDOW_MS = 5_000;
const PAIRED_SETTLE_MS = 1_000;
/**
 * Changes of each kind per mode. A p99 needs well over 100 of them: of 30 (the count until 2026-12-06) the
 * nearest-rank p99 is the slowest one, so one stall in a run decided a kind's verdict. Of 200 it is the third
 * slowest; the slowest is reported beside it.
 */
const OPS_PER_KIND = 200;
const SHORT_LEASE_MS = 1500;
/** How long a mode may take to discover every lock (BENCH_DISCOVERY_TIMEOUT_S; about 35 min at 10,000,000 keys). */
const DISCOVERY_TIMEOUT_MS = Number(process.env.BENCH_DISCOVERY_TIMEOUT_S ?? 480) * 1000;
/** A DEBUG POPULATE key: a 16-byte string value. */
const GET_KEY = "key:4242";
/** Seeded textbook locks (bench/seed-keyspace.ts) the operations act on; restored after each mode. */
const opKey = (i: number) => `lock:order:${i}`;

interface ModeRun {
  label: string;
  env: Record<string, string>;
  toAllTrackedMs: number | null;
  tracked: number;
  lastScanMs: number | null;
  /** The COUNT of the agent's SCAN steps at the end of the steady-state window (the source's scanStepCount). */
  scanStepCount: number | null;
  /** Track mode: the safety sweep's last round over every known lock (the source's lastSweepMs), when one ended. */
  lastSweepMs: number | null;
  changeDetection: string | null;
  commandsPerSec: number | null;
  /** Sum of INFO commandstats calls per second over the same window (commands inside scripts included). */
  commandstatsPerSec: number | null;
  /** Per command, calls per second in the window (the bench's own INFO calls left out). */
  perCommand: Record<string, number>;
  /** Per command, its INFO commandstats usec in the window per wall second, in % of a core (the bench's INFO included). */
  perCommandUsecPct: Record<string, number>;
  redisCpuPct: number | null;
  /** The server's own account of its commands' time (INFO commandstats usec, all commands) per wall second, in %. */
  commandUsecPct: number | null;
  agentCpuPct: number | null;
  agentHwmKb: number | null;
  /** The agent's RSS at the end of the run (VmRSS), beside its peak. */
  agentRssKb: number | null;
  getDuring: Summary | null;
  /** The paired windows (PAIRED_ORDER): the watched server's CPU and another client's GETs, agent running / stopped. */
  paired: {
    redisCpuPct: Record<PairedState, number>;
    get: Record<PairedState, Summary>;
  } | null;
  renewal: Summary | null;
  ownerChange: Summary | null;
  release: Summary | null;
  expired: Summary | null;
  /** Renewals, owner changes and releases together: change → agent observation, and observation → viewer. */
  toObservation: Summary | null;
  toViewer: Summary | null;
  missed: number;
}

/**
 * The watched server's own CPU with no agent attached, over a steady-state window's length: what it spends on its
 * own background work (serverCron, active expiry of the locks' TTLs, the bench's INFO calls) on this keyspace.
 */
async function idleRedisCpuPct(redis: RedisServer): Promise<number> {
  const admin = redis.client();
  try {
    const c0 = await redisCpuSeconds(admin);
    const t0 = performance.now();
    await sleep(STEADY_MS);
    const wall = (performance.now() - t0) / 1000;
    return (((await redisCpuSeconds(admin)) - c0) / wall) * 100;
  } finally {
    admin.disconnect();
  }
}

type PairedState = (typeof PAIRED_ORDER)[number];

/**
 * The agent running and stopped in turn (PAIRED_ORDER), twice: the watched server's CPU share with nothing else
 * sending, then another client's GET latency with the GET loop. The agent is always continued, whatever fails.
 */
async function pairedWindows(
  label: string,
  agentPid: number,
  port: number,
  admin: Redis,
  log: (line: string) => void,
): Promise<NonNullable<ModeRun["paired"]>> {
  /** One window per state of PAIRED_ORDER, the agent stopped for the stopped ones; `measure` runs inside each. */
  const alternate = async (measure: (state: PairedState) => Promise<void>) => {
    for (const state of PAIRED_ORDER) {
      if (state === "stopped") process.kill(agentPid, "SIGSTOP");
      try {
        await sleep(PAIRED_SETTLE_MS);
        await measure(state);
      } finally {
        if (state === "stopped") process.kill(agentPid, "SIGCONT");
      }
    }
  };
  const windows = `${PAIRED_ORDER.length} windows of ${PAIRED_WINDOW_MS / 1000} s`;
  // The server's CPU first, with nothing else sending: the GET loop's own share (a third of a core) moves with its
  // throughput, which the agent's running moves by a percent or so, as much as the agent's own share.
  log(`${label}: agent running / stopped in turn, ${windows}: the watched server's CPU`);
  const cpu: Record<PairedState, { seconds: number; wall: number }> = {
    running: { seconds: 0, wall: 0 },
    stopped: { seconds: 0, wall: 0 },
  };
  await alternate(async (state) => {
    const c0 = await redisCpuSeconds(admin);
    const t0 = performance.now();
    await sleep(PAIRED_WINDOW_MS);
    cpu[state].seconds += (await redisCpuSeconds(admin)) - c0;
    cpu[state].wall += (performance.now() - t0) / 1000;
  });
  log(`${label}: agent running / stopped in turn, ${windows}: another client's GETs`);
  const spans: Record<PairedState, { from: number; to: number }[]> = { running: [], stopped: [] };
  const total = PAIRED_ORDER.length * (PAIRED_WINDOW_MS + PAIRED_SETTLE_MS);
  const { samples } = await withGetLoop(port, GET_KEY, total + 20_000, () =>
    alternate(async (state) => {
      const from = epochMs();
      await sleep(PAIRED_WINDOW_MS);
      spans[state].push({ from, to: epochMs() });
    }),
  );
  const pct = (s: PairedState) => (cpu[s].seconds / cpu[s].wall) * 100;
  return {
    redisCpuPct: { running: pct("running"), stopped: pct("stopped") },
    get: { running: samples.windows(spans.running), stopped: samples.windows(spans.stopped) },
  };
}

/** Waits for an event of this type and resource from this agent at the viewer; resolves with its arrival time. */
function eventWaiter(viewer: UiViewer, agentId: string) {
  const seen = new Map<string, number>();
  /** The agent's observation time (the event's `at`), same machine clock as the arrival. */
  const observed = new Map<string, number>();
  const stop = viewer.onEvents((events: LockEvent[], atMs) => {
    for (const ev of events) {
      if (ev.agentId !== agentId) continue;
      const k = `${ev.type}\n${ev.resource}`;
      if (!seen.has(k)) {
        seen.set(k, atMs);
        observed.set(k, Date.parse(ev.at));
      }
    }
  });
  return {
    arrival: (type: string, resource: string) => seen.get(`${type}\n${resource}`),
    observedAt: (type: string, resource: string) => observed.get(`${type}\n${resource}`),
    forget: (type: string, resource: string) => seen.delete(`${type}\n${resource}`),
    stop,
  };
}

/**
 * The large size's track run: a paced SCAN pass over 10,000,000 keys takes one to two hours at the default budget
 * (the pass rate is reported from the steady-state window instead), so the locks are parked in database 1 (MOVE keeps
 * value and TTL) before the agent starts, and moved back once it tracks: its BCAST prefixes (LOCK_PATTERNS with a
 * literal prefix for every format of the mix) announce each one. The steady state measured after that is the
 * same as after a SCAN discovery: the sweep over every known lock and the paced SCAN.
 */
const ANNOUNCED_PATTERNS = "lock:*,locks:*,mutex:*,semaphore:*,orderLock:*,job-lock:*,pylock:*";

/** Moves every key matching ANNOUNCED_PATTERNS from one database to the other (SCAN, MOVE in pipelines). */
async function moveLocks(redis: RedisServer, from: number, to: number): Promise<number> {
  const c = redis.client();
  try {
    await c.select(from);
    let moved = 0;
    for (const pattern of ANNOUNCED_PATTERNS.split(",")) {
      let cursor = "0";
      do {
        const [next, keys] = await c.scan(cursor, "MATCH", pattern, "COUNT", 10_000);
        cursor = next;
        if (keys.length === 0) continue;
        const p = c.pipeline();
        for (const k of keys) p.move(k, to);
        for (const [err, ok] of (await p.exec()) ?? []) {
          if (err) throw err;
          moved += Number(ok);
        }
      } while (cursor !== "0");
    }
    return moved;
  } finally {
    c.disconnect();
  }
}

/** The locks the operations act on, each with a fresh token and a 20-minute lease. */
async function resetOpKeys(writer: Redis): Promise<void> {
  const p = writer.pipeline();
  for (let i = 0; i < 2 * OPS_PER_KIND; i++) p.set(opKey(i), randomBytes(12).toString("base64url"), "PX", 20 * 60_000);
  await p.exec();
}

/** CLOCK_MONOTONIC in µs, the clock of a V8 CPU profile's startTime, endTime and sample times on Linux. */
function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Waits for the agent's next SCAN step (INFO commandstats): the budget allows optional work again. */
async function debtPaid(admin: Redis, label: string, log: (line: string) => void): Promise<void> {
  const scans = async () => parseCommandStats(await admin.info("commandstats")).get("scan")?.calls ?? 0;
  const t0 = performance.now();
  const before = await scans();
  while ((await scans()) <= before) {
    if (performance.now() - t0 > DISCOVERY_TIMEOUT_MS) {
      log(`${label}: no SCAN step within ${DISCOVERY_TIMEOUT_MS / 1000} s of the last lock; measuring anyway`);
      return;
    }
    await sleep(500);
  }
  log(`${label}: the budget allowed a SCAN step again after ${seconds(performance.now() - t0)}`);
}

async function modeRun(
  ctx: { dashboard: Dashboard; viewer: UiViewer; redis: RedisServer; cleanup: Cleanup },
  label: string,
  env: Record<string, string>,
  expected: number,
  log: (line: string) => void,
  announce = false,
  nodeFlags: readonly string[] = [],
): Promise<ModeRun> {
  const admin = ctx.redis.client();
  const writer = ctx.redis.client();
  // Before the agent starts: a PEXPIRE of 25 minutes renews only a lease shorter than that, and at the large size
  // the seeded leases are 3 h (the first mode's renewals were read as shortened leases: no `renewed` event).
  await resetOpKeys(writer);
  if (announce) log(`${label}: ${await moveLocks(ctx.redis, 0, 1)} locks parked in database 1`);
  writer.defineCommand("releaseLock", APP_RELEASE);
  const agentId = `bench-cd-${label.replace(/[^A-Za-z0-9]+/g, "-")}`;
  const sourceId = parseRedisTarget("REDIS_URLS", ctx.redis.url).id;
  const waiter = eventWaiter(ctx.viewer, agentId);
  const started = performance.now();
  const agent = startAgent(
    ctx.dashboard.url,
    {
      REDIS_URLS: ctx.redis.url,
      AGENT_ID: agentId,
      POLL_INTERVAL_MS: "1000",
      // The paired windows stop the agent for up to 12 s: a reply that arrived meanwhile must not be taken for a
      // late one (on resuming, a process runs its due timers before it reads its sockets). Nothing times out in
      // the rest of the run either way.
      COMMAND_TIMEOUT_MS: "30000",
      ...env,
    },
    { compiled: true, nodeFlags },
  );
  const stopAgent = ctx.cleanup.add(`agent ${agentId}`, () => agent.stop());
  const run: ModeRun = {
    label,
    env,
    toAllTrackedMs: null,
    tracked: 0,
    lastScanMs: null,
    scanStepCount: null,
    lastSweepMs: null,
    changeDetection: null,
    commandsPerSec: null,
    commandstatsPerSec: null,
    perCommand: {},
    perCommandUsecPct: {},
    redisCpuPct: null,
    commandUsecPct: null,
    agentCpuPct: null,
    agentHwmKb: null,
    agentRssKb: null,
    getDuring: null,
    paired: null,
    renewal: null,
    ownerChange: null,
    release: null,
    expired: null,
    toObservation: null,
    toViewer: null,
    missed: 0,
  };
  try {
    if (announce) {
      const deadline = performance.now() + 120_000;
      while (ctx.viewer.source(agentId, sourceId)?.changeDetection !== "track") {
        if (performance.now() > deadline) throw new Error(`${label}: the agent did not report tracking within 120 s`);
        if (agent.process.exitCode !== null) throw new Error(`agent exited: ${agent.output().slice(-2000)}`);
        await sleep(100);
      }
      log(`${label}: tracking; ${await moveLocks(ctx.redis, 1, 0)} locks moved back, announced by BCAST`);
    }
    log(`${label}: waiting for ${expected.toLocaleString("en")} locks tracked`);
    let nextReport = 15_000;
    while (performance.now() - started < DISCOVERY_TIMEOUT_MS) {
      if (agent.process.exitCode !== null) throw new Error(`agent exited: ${agent.output().slice(-2000)}`);
      const locks = ctx.viewer.source(agentId, sourceId)?.locks ?? 0;
      if (locks >= expected) {
        run.toAllTrackedMs = performance.now() - started;
        break;
      }
      if (performance.now() - started > nextReport) {
        log(`${label}: ${locks} locks at the viewer after ${nextReport / 1000} s`);
        nextReport += 15_000;
      }
      await sleep(100);
    }
    const source = ctx.viewer.source(agentId, sourceId);
    run.tracked = source?.locks ?? 0;
    if (run.toAllTrackedMs !== null) log(`${label}: every lock at the viewer after ${seconds(run.toAllTrackedMs)}`);
    run.changeDetection = source?.changeDetection ?? null;
    if (run.toAllTrackedMs === null) {
      log(`${label}: only ${run.tracked} locks after ${DISCOVERY_TIMEOUT_MS / 1000} s; measuring anyway`);
    }
    // At the large size the 100,000 announced reads put the budget in debt (about 130 s at 0.7%), and no SCAN step
    // or sweep runs until it is paid: the steady state starts at the first SCAN step after that.
    if (announce) await debtPaid(admin, label, log);
    // Let the first full snapshot and the discovery's reads settle before the steady-state window.
    await sleep(Number(process.env.BENCH_SETTLE_S ?? 3) * 1000);
    return await holdingHeavyLock(`${label}: measuring`, log, async () => {
      const pid = scriptProcess(agent.process.pid!, "dist/agent.mjs");
      log(`${label}: steady state, ${STEADY_MS / 1000} s`);
      const stats0 = parseCommandStats(await admin.info("commandstats"));
      const cmd0 = infoNumber(await admin.info("stats"), "total_commands_processed");
      const rcpu0 = await redisCpuSeconds(admin);
      const acpu0 = pid === null ? null : cpuSeconds(pid);
      const t0 = performance.now();
      const mono0 = monotonicUs();
      await sleep(STEADY_MS);
      const wall = (performance.now() - t0) / 1000;
      // On the clock of a V8 CPU profile (CLOCK_MONOTONIC, µs): its samples in the window can be picked out.
      log(`${label}: steady-state window on the monotonic clock: ${mono0} to ${monotonicUs()} µs`);
      const acpu1 = pid === null ? null : cpuSeconds(pid);
      const rcpu1 = await redisCpuSeconds(admin);
      // Less the two INFO calls of this window itself.
      const cmd1 = infoNumber(await admin.info("stats"), "total_commands_processed") - 2;
      const stats1 = parseCommandStats(await admin.info("commandstats"));
      run.commandsPerSec = (cmd1 - cmd0) / wall;
      run.scanStepCount = ctx.viewer.source(agentId, sourceId)?.scanStepCount ?? null;
      let calls = 0;
      let usec = 0;
      for (const [name, st] of stats1) {
        // The window's own INFO calls (two stats, one cpu at each end, one commandstats) are the bench's.
        const own = name === "info" ? 5 : 0;
        const du = st.usec - (stats0.get(name)?.usec ?? 0);
        usec += du;
        if (du > 0) run.perCommandUsecPct[name] = Number(((du / 1e6 / wall) * 100).toFixed(3));
        const d = st.calls - (stats0.get(name)?.calls ?? 0) - own;
        if (d <= 0) continue;
        calls += d;
        run.perCommand[name] = Number((d / wall).toFixed(1));
      }
      run.commandstatsPerSec = calls / wall;
      run.commandUsecPct = (usec / 1e6 / wall) * 100;
      run.redisCpuPct = ((rcpu1 - rcpu0) / wall) * 100;
      if (acpu0 !== null && acpu1 !== null) run.agentCpuPct = ((acpu1 - acpu0) / wall) * 100;

      log(`${label}: another client's GETs, ${GET_WINDOW_MS / 1000} s`);
      const { samples, result: span } = await withGetLoop(ctx.redis.port, GET_KEY, GET_WINDOW_MS + 20_000, async () => {
        const from = epochMs();
        await sleep(GET_WINDOW_MS);
        return { from, to: epochMs() };
      });
      run.getDuring = samples.windows([span]);
      if (pid !== null) run.paired = await pairedWindows(label, pid, ctx.redis.port, admin, log);

      log(`${label}: ${OPS_PER_KIND} renewals, owner changes, releases and short leases`);
      const latencies = { renewed: [] as number[], "owner-changed": [] as number[], released: [] as number[] };
      const expiredLat: number[] = [];
      const toObservation: number[] = [];
      const toViewer: number[] = [];
      // The event's `at` is the agent's Date.now(); this bench's times are epochMs() (the monotonic clock from the
      // process's time origin), which drifted from the wall clock by about 720 ms on a machine of 2026-12-06 (the
      // split then read 731 ms to the agent and -723 ms to the viewer). The agent's times are put on this clock.
      const wallAhead = Date.now() - epochMs();
      const opsMono0 = monotonicUs();
      const pending: Array<{ type: keyof typeof latencies | "expired"; resource: string; fromMs: number }> = [];
      const release = (k: string, t: string) =>
        (writer as unknown as { releaseLock(k: string, t: string): Promise<number> }).releaseLock(k, t);
      for (let i = 0; i < OPS_PER_KIND; i++) {
        const key = opKey(i);
        // Renewal.
        let t = epochMs();
        await writer.pexpire(key, 25 * 60_000);
        pending.push({ type: "renewed", resource: key, fromMs: t });
        await sleep(60 + Math.random() * 90);
        // Owner change.
        const token = randomBytes(12).toString("base64url");
        t = epochMs();
        await writer.set(key, token, "PX", 25 * 60_000, "XX");
        pending.push({ type: "owner-changed", resource: key, fromMs: t });
        await sleep(60 + Math.random() * 90);
        // Compare-and-delete release.
        t = epochMs();
        await release(key, token);
        pending.push({ type: "released", resource: key, fromMs: t });
        await sleep(60 + Math.random() * 90);
      }
      // Short leases: a known lock taken over with a lease that runs out; measured from the lease's end.
      for (let i = OPS_PER_KIND; i < 2 * OPS_PER_KIND; i++) {
        const key = opKey(i);
        await writer.set(key, randomBytes(12).toString("base64url"), "PX", SHORT_LEASE_MS, "XX");
        pending.push({ type: "expired", resource: key, fromMs: epochMs() + SHORT_LEASE_MS });
        await sleep(30 + Math.random() * 60);
      }
      log(`${label}: the changes on the monotonic clock (a CPU profile's): ${opsMono0} to ${monotonicUs()} µs`);
      const deadline = performance.now() + 20_000;
      while (performance.now() < deadline && pending.some((p) => waiter.arrival(p.type, p.resource) === undefined)) {
        await sleep(100);
      }
      for (const p of pending) {
        const at = waiter.arrival(p.type, p.resource);
        if (at === undefined) {
          run.missed++;
          continue;
        }
        if (p.type === "expired") expiredLat.push(at - p.fromMs);
        else {
          latencies[p.type].push(at - p.fromMs);
          const observedAt = waiter.observedAt(p.type, p.resource);
          const obs = observedAt === undefined ? undefined : observedAt - wallAhead;
          if (obs !== undefined && Number.isFinite(obs)) {
            toObservation.push(obs - p.fromMs);
            toViewer.push(at - obs);
          }
        }
      }
      run.renewal = summarize(latencies.renewed);
      run.ownerChange = summarize(latencies["owner-changed"]);
      run.release = summarize(latencies.released);
      run.expired = summarize(expiredLat);
      run.toObservation = summarize(toObservation);
      run.toViewer = summarize(toViewer);
      run.lastScanMs = ctx.viewer.source(agentId, sourceId)?.lastScanMs ?? null;
      const agentPid = scriptProcess(agent.process.pid!, "dist/agent.mjs");
      const mem = agentPid === null ? null : memoryKb(agentPid);
      run.agentHwmKb = mem?.hwmKb ?? null;
      run.agentRssKb = mem?.rssKb ?? null;
      run.lastSweepMs = ctx.viewer.source(agentId, sourceId)?.lastSweepMs ?? null;
      return run;
    });
  } finally {
    waiter.stop();
    await stopAgent();
    // BENCH_AGENT_LOG=<file>: the agent's last 20,000 characters of output (with BENCH_AGENT_NODE_FLAGS=--trace-gc,
    // its collections), one file per mode: <file>.<mode>.
    if (process.env.BENCH_AGENT_LOG) writeFileSync(`${process.env.BENCH_AGENT_LOG}.${label}`, agent.output());
    // Put the locks the operations removed or shortened back, for the next mode.
    await resetOpKeys(writer);
    admin.disconnect();
    writer.disconnect();
  }
}

export async function measureChangeDetection(
  ctx: { dashboard: Dashboard; viewer: UiViewer; redis: RedisServer; cleanup: Cleanup },
  expected: number,
  log: (line: string) => void,
): Promise<SectionResult> {
  const bundled = ensureAgentBundle();
  log(`agent: node dist/agent.mjs; ${bundled}`);
  const admin = ctx.redis.client();
  await admin.config("SET", "notify-keyspace-events", "");
  const keys = await admin.dbsize();
  const { baseline, idleBefore } = await holdingHeavyLock("baselines", log, async () => {
    log(`GET loop alone for ${GET_WINDOW_MS / 1000} s (baseline)`);
    const { samples, result: span } = await withGetLoop(ctx.redis.port, GET_KEY, GET_WINDOW_MS + 20_000, async () => {
      const from = epochMs();
      await sleep(GET_WINDOW_MS);
      return { from, to: epochMs() };
    });
    log(`watched Redis CPU with no agent for ${STEADY_MS / 1000} s (baseline)`);
    return { baseline: samples.windows([span]), idleBefore: await idleRedisCpuPct(ctx.redis) };
  });
  admin.disconnect();

  // BENCH_TRACKING_MODES=track: the track run alone (poll mode at 100,000 locks is most of a core for minutes).
  const modes = (process.env.BENCH_TRACKING_MODES ?? "poll,track").split(",");
  const poll = !modes.includes("poll")
    ? null
    : await modeRun(
        ctx,
        "poll",
        // Today's polling: every lock re-read each second, SCAN paced by key visits only (no server-time budget).
        {
          REDIS_CHANGE_DETECTION: "poll",
          REDIS_SERVER_TIME_BUDGET_PERCENT: "0",
          // Past 25,000 locks today's visit budget (each known lock costs 4 visits of 100,000 a poll) leaves one SCAN step
          // a poll, and 10,000,000 keys would take hours: unlimited visits, so that poll mode gets to its steady state.
          ...(expected > 10_000 ? { MAX_KEY_VISITS_PER_SEC: "0" } : {}),
        },
        expected,
        log,
      );
  const announce = expected > 10_000;
  const trackEnv = { REDIS_CHANGE_DETECTION: "track", ...(announce ? { LOCK_PATTERNS: ANNOUNCED_PATTERNS } : {}) };
  const track = await modeRun(
    ctx,
    "track",
    trackEnv,
    expected,
    log,
    announce,
    // BENCH_AGENT_CPU_PROF=<dir>: a V8 CPU profile of the track run's agent, written there when it stops (a node
    // flag: NODE_OPTIONS refuses --cpu-prof).
    [
      ...(process.env.BENCH_AGENT_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_AGENT_CPU_PROF}`] : []),
      // BENCH_AGENT_NODE_FLAGS: more node flags for the track run's agent (a V8 experiment), space-separated.
      ...(process.env.BENCH_AGENT_NODE_FLAGS?.split(" ").filter((f) => f !== "") ?? []),
    ],
  );
  // BENCH_TRACKING_MODES may also name variants of track, run after it on the same server: "track:NAME=value"
  // (several settings joined by "+"), such as track:REDIS_SCAN_STEP_US=0. Reported beside it, without verdicts.
  const variants: ModeRun[] = [];
  for (const mode of modes.filter((m) => m.startsWith("track:"))) {
    const settings = Object.fromEntries(
      mode
        .slice("track:".length)
        .split("+")
        .map((kv) => kv.split("=") as [string, string]),
    );
    variants.push(await modeRun(ctx, mode, { ...trackEnv, ...settings }, expected, log, announce));
  }
  const runs = [...(poll ? [poll] : []), track, ...variants];
  log(`watched Redis CPU with no agent for ${STEADY_MS / 1000} s (baseline, after the modes)`);
  const idleAfter = await holdingHeavyLock("baseline after", log, () => idleRedisCpuPct(ctx.redis));
  // The no-agent share, the mean of a window before the modes and one after them (both reported).
  const idle = (idleBefore + idleAfter) / 2;
  const attributable = (r: ModeRun) => (r.redisCpuPct === null ? null : r.redisCpuPct - idle);

  const num = (v: number | null, digits = 0) => (v === null ? "n/a" : v.toFixed(digits));
  const lat = (s: Summary | null) => (s && s.n > 0 ? `${p50p99(s, 0)}, max ${ms(s.max, 0)} (n ${s.n})` : "n/a");
  const getDelta = (s: Summary | null) => (s ? s.p99 - baseline.p99 : Number.NaN);
  const pairedCpu = (r: ModeRun) => (r.paired ? r.paired.redisCpuPct.running - r.paired.redisCpuPct.stopped : null);
  const pairedGet = (r: ModeRun) => (r.paired ? r.paired.get.running.p99 - r.paired.get.stopped.p99 : Number.NaN);
  const signed = (v: number) => `${v >= 0 ? "+" : ""}${ms(v, 2)}`;
  const signed2 = (v: number | null) => (v === null ? "n/a" : `${v >= 0 ? "+" : ""}${v.toFixed(2)}%`);
  type Measure = {
    measure: string;
    value: (r: ModeRun) => string;
    target?: string;
    ok?: (r: ModeRun) => boolean;
  };
  const measures: Measure[] = [
    {
      measure: "commands/s to the watched Redis, steady state, locks quiet",
      value: (r) => `${num(r.commandsPerSec)} (commandstats: ${num(r.commandstatsPerSec)})`,
      target: expected <= 10_000 ? "≤ 500" : undefined,
      ok: (r) => (r.commandsPerSec ?? Infinity) <= 500,
    },
    {
      measure: "watched Redis CPU, (used_cpu_user+sys) delta / wall",
      value: (r) => `${num(r.redisCpuPct, 2)}% of a core`,
      target: "≤ 1%",
      ok: (r) => (r.redisCpuPct ?? Infinity) <= 1,
    },
    {
      measure: `watched Redis CPU attributable to the agent: the row above less no agent (${num(idleBefore, 2)}% before the modes, ${num(idleAfter, 2)}% after; mean ${num(idle, 2)}%)`,
      value: (r) => `${signed2(attributable(r))} of a core (commandstats usec: ${num(r.commandUsecPct, 2)}%)`,
      target: "≤ 1%",
      ok: (r) => (attributable(r) ?? Infinity) <= 1,
    },
    {
      measure: `watched Redis CPU, agent running / stopped in alternating ${PAIRED_WINDOW_MS / 1000} s windows (${PAIRED_ORDER.length / 2} of each), and the difference`,
      value: (r) =>
        r.paired
          ? `${num(r.paired.redisCpuPct.running, 2)}% / ${num(r.paired.redisCpuPct.stopped, 2)}% (${signed2(pairedCpu(r))} of a core)`
          : "n/a",
      target: "difference ≤ 1%",
      ok: (r) => (pairedCpu(r) ?? Infinity) <= 1,
    },
    {
      measure: "renewal → event at the viewer, p50 / p99",
      value: (r) => lat(r.renewal),
      target: "p99 ≤ 50 ms",
      ok: (r) => (r.renewal?.p99 ?? Infinity) <= 50,
    },
    {
      measure: "owner change → event, p50 / p99",
      value: (r) => lat(r.ownerChange),
      target: "p99 ≤ 50 ms",
      ok: (r) => (r.ownerChange?.p99 ?? Infinity) <= 50,
    },
    {
      measure: "compare-and-delete release → event, p50 / p99",
      value: (r) => lat(r.release),
      target: "p99 ≤ 50 ms",
      ok: (r) => (r.release?.p99 ?? Infinity) <= 50,
    },
    {
      measure: "lease end → `expired` event, p50 / p99",
      value: (r) => lat(r.expired),
      target: "p99 ≤ 250 ms",
      ok: (r) => (r.expired?.p99 ?? Infinity) <= 250,
    },
    {
      measure: "agent CPU, steady state",
      value: (r) => `${num(r.agentCpuPct, 1)}% of a core`,
      target: "≤ 5%",
      ok: (r) => (r.agentCpuPct ?? Infinity) <= 5,
    },
    {
      measure: "agent peak RSS (VmHWM)",
      value: (r) => `${mb(r.agentHwmKb)} (RSS at the end ${mb(r.agentRssKb)})`,
      // The issue's targets for these two are at 10,000 locks; at 100,000 they are reported.
      target: expected <= 10_000 ? "≤ 150 MB" : undefined,
      ok: (r) => r.agentHwmKb !== null && r.agentHwmKb / 1024 <= 150,
    },
    {
      measure: `another client's GET p99 (no agent: ${ms(baseline.p99, 2)})`,
      value: (r) => (r.getDuring ? `${ms(r.getDuring.p99, 2)} (${signed(getDelta(r.getDuring))})` : "n/a"),
      target: "≤ +0.1 ms",
      ok: (r) => getDelta(r.getDuring) <= 0.1,
    },
    {
      measure: "another client's GET p99, agent running / stopped in the alternating windows",
      value: (r) =>
        r.paired
          ? `${ms(r.paired.get.running.p99, 2)} / ${ms(r.paired.get.stopped.p99, 2)} (${signed(pairedGet(r))}; p50 ${ms(r.paired.get.running.p50, 3)} / ${ms(r.paired.get.stopped.p50, 3)}; p99.9 ${ms(r.paired.get.running.p999, 2)} / ${ms(r.paired.get.stopped.p999, 2)}; n ${r.paired.get.running.n} / ${r.paired.get.stopped.n})`
          : "n/a",
      target: "≤ +0.1 ms",
      ok: (r) => pairedGet(r) <= 0.1,
    },
    {
      measure: "agent start → every lock at the viewer (one discovery pass)",
      value: (r) =>
        (r.toAllTrackedMs === null
          ? `incomplete after ${seconds(DISCOVERY_TIMEOUT_MS)}: ${r.tracked} locks`
          : seconds(r.toAllTrackedMs)) +
        (r.lastScanMs !== null ? `; last full SCAN pass ${seconds(r.lastScanMs)}` : ""),
    },
    {
      measure: "paced SCAN in the steady-state window: steps/s, and one pass over the keyspace at that rate",
      value: (r) => {
        const steps = r.perCommand.scan ?? 0;
        // An agent that does not report its step's COUNT asks for SCAN_COUNT's default.
        const count = r.scanStepCount ?? 1000;
        // The server's mean time a step (commandstats): what another client's command may wait behind.
        const usec = ((r.perCommandUsecPct.scan ?? 0) / 100 / steps) * 1e6;
        return steps > 0
          ? `${steps.toFixed(1)} steps/s of COUNT ${count}, ${usec.toFixed(0)} µs each by the server's account; ${seconds((keys / (steps * count)) * 1000)} (computed)`
          : "no SCAN step";
      },
    },
    {
      measure: "the safety sweep's last round over every known lock (lastSweepMs)",
      value: (r) => (r.lastSweepMs === null ? "no round ended" : seconds(r.lastSweepMs)),
    },
  ];
  const rows: Row[] = [];
  for (const m of measures) {
    for (const r of runs) {
      const row: Row = { measure: `${m.measure} — ${r.label}`, result: m.value(r) };
      if (m.target && r.label === "track") {
        row.target = m.target;
        row.verdict = verdict(m.ok!(r));
      }
      rows.push(row);
    }
  }
  return {
    id: "tracking",
    title: "Change detection: poll vs track",
    status: "measured",
    rows,
    notes: [
      `One run, one server: ${expected.toLocaleString("en")} locks among ${keys.toLocaleString("en")} keys, notify-keyspace-events "", the real agent process as production runs it (node dist/agent.mjs, ${bundled}; POLL_INTERVAL_MS 1000) per mode, one after the other; the keys the operations changed are restored between the modes.`,
      `poll is today's behaviour: REDIS_CHANGE_DETECTION=poll with the server-time budget off (REDIS_SERVER_TIME_BUDGET_PERCENT=0; SCAN paced by MAX_KEY_VISITS_PER_SEC only${expected > 10_000 ? "; at this size MAX_KEY_VISITS_PER_SEC=0 too, since today's visit budget would leave one SCAN step a poll past 25,000 locks" : ""}). track is the default: CLIENT TRACKING with BCAST for ${announce ? `the literal prefixes of LOCK_PATTERNS=${ANNOUNCED_PATTERNS} (the locks parked in database 1 before the agent started and moved back once it tracked, so BCAST announced them)` : "mutex: and semaphore:"}, REDIS_SERVER_TIME_BUDGET_PERCENT at its default (${DEFAULT_SERVER_TIME_BUDGET_PERCENT}; the sweep at most half of it), REDIS_SWEEP_MS=60000.`,
      `Commands per second by command in the steady-state window (INFO commandstats, which counts the commands a script calls too; total_commands_processed counted them as well on redis 7.0.15): poll ${poll ? JSON.stringify(poll.perCommand) : "not run"}; track ${JSON.stringify(track.perCommand)}. Their server time (commandstats usec per wall second, % of a core): poll ${poll ? JSON.stringify(poll.perCommandUsecPct) : "not run"}; track ${JSON.stringify(track.perCommandUsecPct)}.`,
      `Steady state is a ${STEADY_MS / 1000} s window after every lock was at the viewer, with no lock changing; commands/s is the server's total_commands_processed delta (less the window's own two INFO calls), Redis CPU its used_cpu_user+used_cpu_sys delta. In track mode what is left is the safety sweep (each lock once a minute: about ${Math.round(expected / 60)} locks/s, each a PTTL and the bounded read when that read sees the whole value, with one PUBSUB NUMSUB per batch for Redisson locks; TYPE, PTTL, a length and the bounded read plus companion reads for the others and for any lock whose cheap read differs), INFO server and INFO replication once a poll, INFO commandstats every 10 s, and paced SCAN steps.`,
      `Event latency: from just before the client's command to the event arriving at a dashboard viewer's socket, ${OPS_PER_KIND} of each, 60 to 150 ms apart, on known textbook locks; lease end is measured from the moment a ${SHORT_LEASE_MS} ms lease set on a known lock should end. Events not seen within 20 s: poll ${poll?.missed ?? "not run"}, track ${track.missed}.`,
      `Where the change latency goes (renewals, owner changes and releases together; the event's \`at\` is the agent's clock at its read, the same machine's clock as the viewer's): change → agent observation ${lat(poll?.toObservation ?? null)} / ${lat(track.toObservation)}, observation → event at the viewer (agent → dashboard message, the store's commit, the broadcast) ${lat(poll?.toViewer ?? null)} / ${lat(track.toViewer)} (poll / track).`,
      `Redis CPU with no agent: the same server and keyspace, nothing attached but the bench's INFO connection, for ${STEADY_MS / 1000} s before the poll mode (${num(idleBefore, 2)}%) and after the track mode (${num(idleAfter, 2)}%); the attributable share is each mode's total less their mean. Commandstats usec is the sum of INFO commandstats usec over the steady-state window (every client's commands, the bench's few INFO calls included) per wall second: the server's own account of command time, without request parsing, reply writing and the event loop around them.`,
      `GET p99: a separate Node process doing single GETs for ${GET_WINDOW_MS / 1000} s with no agent, and again in each mode's steady state.`,
      `Paired windows, after the steady-state and GET windows: the agent's process running and stopped with SIGSTOP in turn (${PAIRED_ORDER.join(", ")}), ${PAIRED_WINDOW_MS / 1000} s each after ${PAIRED_SETTLE_MS / 1000} s left out at each switch, once for the server's CPU with nothing else sending, then once with the GET loop for its latency: both sides under the same load drift of a shared machine, where the one-off baseline before the modes was taken minutes earlier. A stopped agent sends nothing and holds its connections (COMMAND_TIMEOUT_MS is 30 s in this bench so that a reply that came while it was stopped is not taken for a late one); the dashboard, the viewer and the bench run on both sides.`,
      "The full-discovery ratio (unlimited budget / raw SCAN COUNT 1000 loop) is the Discovery scan section above: a first pass reads the same keys the same way in both modes.",
      "Two cores shared with other work: see the load average of the run; the GET p99 and the CPU shares move with it.",
    ],
    details: { baseline, idleRedisCpuPct: { before: idleBefore, after: idleAfter }, runs },
  };
}
