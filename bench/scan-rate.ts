/**
 * The paced SCAN's rate on a large keyspace (issue 11: "how long one paced pass takes at 10 M keys"), measured over
 * a bounded window instead of a whole pass (17 to 25 minutes at 1% of a core): the real agent (node dist/agent.mjs,
 * track mode, the default 1% server-time budget) against a server of SCAN_RATE_KEYS keys (default 10,000,000: DEBUG
 * POPULATE filler plus the bench's 10,000 locks, bench/seed-keyspace.ts). After SCAN_RATE_WARMUP_S of warm-up,
 * SCAN calls over SCAN_RATE_WINDOW_S (INFO commandstats) times the mean keys one SCAN COUNT 1000 step returns on
 * this server (sampled by the bench before the agent starts), scaled to the COUNT of the agent's steps at the
 * window's end (its scanStepCount), is the rate; the pass time it implies is the key count over that rate:
 * computed, not observed.
 *
 *   flock /tmp/lockscope-heavy.lock npx tsx bench/scan-rate.ts
 *
 * SCAN_RATE_STEP_US=n runs the agent with REDIS_SCAN_STEP_US=n (default: the agent's default).
 *
 * SCAN_RATE_OBSERVE_PASSES=N then also waits (at most SCAN_RATE_OBSERVE_MAX_S, default 3 h) for the source to report N
 * whole passes (its lastScanAt and lastScanMs, as the dashboard shows them): observed, not computed. The first pass
 * started with the agent and also found and read the locks; the later ones are the steady state.
 */
import { parseRedisTarget } from "../agent/config";
import { startRedis } from "../tests/harness/redis";
import { startAgent, startDashboard, TOKENS } from "../tests/harness/stack";
import { seedKeyspace } from "./seed-keyspace";
import { ensureAgentBundle } from "./support/agent-bundle";
import { currentLoad } from "./support/machine";
import { readServerTime, redisCpuSeconds } from "./support/redis-stats";
import { sleep } from "./support/stats";
import { connectViewer } from "./support/ui-socket";

const KEYS = Number(process.env.SCAN_RATE_KEYS ?? 10_000_000);
const WARMUP_S = Number(process.env.SCAN_RATE_WARMUP_S ?? 30);
const WINDOW_S = Number(process.env.SCAN_RATE_WINDOW_S ?? 180);
const SAMPLE_STEPS = 200;
const OBSERVE_PASSES = Number(process.env.SCAN_RATE_OBSERVE_PASSES ?? 0);
const OBSERVE_MAX_S = Number(process.env.SCAN_RATE_OBSERVE_MAX_S ?? 3 * 3600);

const log = (line: string) => process.stdout.write(`[${new Date().toISOString()}] ${line}\n`);

async function main(): Promise<void> {
  log(`load ${currentLoad().toFixed(2)}; ${ensureAgentBundle()}`);
  const redis = await startRedis();
  const dashboard = await startDashboard();
  const admin = redis.client();
  try {
    log(`redis-server on ${redis.port}: populating ${KEYS.toLocaleString("en")} keys`);
    const seed = await seedKeyspace(admin, KEYS);
    log(`populated in ${(seed.populateMs / 1000).toFixed(1)} s; dbsize ${await admin.dbsize()}`);
    // What one step of the agent's SCAN returns here: the same COUNT from consecutive cursors.
    let cursor = "0";
    let returned = 0;
    for (let i = 0; i < SAMPLE_STEPS; i++) {
      const [next, keys] = await admin.scan(cursor, "COUNT", 1000);
      returned += keys.length;
      cursor = next;
    }
    const keysPerStep = returned / SAMPLE_STEPS;
    log(`SCAN COUNT 1000 returns ${keysPerStep.toFixed(1)} keys a step (mean of ${SAMPLE_STEPS})`);

    const viewer = await connectViewer(dashboard.url, TOKENS.viewer, log);
    const agentId = "bench-scan-rate";
    const sourceId = parseRedisTarget("REDIS_URLS", redis.url).id;
    const agent = startAgent(
      dashboard.url,
      {
        REDIS_URLS: redis.url,
        AGENT_ID: agentId,
        POLL_INTERVAL_MS: "1000",
        // SCAN_RATE_STEP_US: the agent's REDIS_SCAN_STEP_US (0: every step COUNT 1000, as before it existed).
        ...(process.env.SCAN_RATE_STEP_US !== undefined ? { REDIS_SCAN_STEP_US: process.env.SCAN_RATE_STEP_US } : {}),
      },
      {
        compiled: true,
      },
    );
    try {
      await sleep(WARMUP_S * 1000);
      const s0 = await readServerTime(admin);
      const cpu = () => redisCpuSeconds(admin);
      const c0 = await cpu();
      const t0 = performance.now();
      const load0 = currentLoad();
      log(`measuring ${WINDOW_S} s (load ${load0.toFixed(2)})`);
      await sleep(WINDOW_S * 1000);
      const wall = (performance.now() - t0) / 1000;
      const c1 = await cpu();
      const s1 = await readServerTime(admin);
      const calls = s1.scanCalls - s0.scanCalls;
      // The agent sizes its steps (REDIS_SCAN_STEP_US): a step of COUNT n returns about n / 1000 of a COUNT 1000 one.
      const stepCount = viewer.source(agentId, sourceId)?.scanStepCount ?? 1000;
      const keysPerSec = (calls / wall) * keysPerStep * (stepCount / 1000);
      const result = {
        keys: KEYS,
        locks: seed.locks,
        windowS: Number(wall.toFixed(1)),
        scanCallsPerSec: Number((calls / wall).toFixed(2)),
        scanUsecPerCall: calls > 0 ? Number(((s1.scanUsec - s0.scanUsec) / calls).toFixed(1)) : null,
        keysPerStep: Number(((keysPerStep * stepCount) / 1000).toFixed(1)),
        stepCount,
        keysPerSec: Math.round(keysPerSec),
        impliedPassS: keysPerSec > 0 ? Math.round(KEYS / keysPerSec) : null,
        redisCpuPct: Number((((c1 - c0) / wall) * 100).toFixed(2)),
        locksAtViewer: viewer.source(agentId, sourceId)?.locks ?? 0,
        load: { start: load0, end: currentLoad() },
      };
      log(`result ${JSON.stringify(result)}`);
      const deadline = performance.now() + OBSERVE_MAX_S * 1000;
      const passes: Array<{ at: string; ms: number }> = [];
      while (passes.length < OBSERVE_PASSES && performance.now() < deadline) {
        const s = viewer.source(agentId, sourceId);
        if (s?.lastScanAt && s.lastScanMs !== undefined && s.lastScanAt !== passes.at(-1)?.at) {
          passes.push({ at: s.lastScanAt, ms: s.lastScanMs });
          log(
            `pass ${passes.length} ended ${s.lastScanAt}: ${(s.lastScanMs / 1000).toFixed(1)} s (load ${currentLoad().toFixed(2)})`,
          );
        }
        await sleep(1000);
      }
      if (OBSERVE_PASSES > 0) {
        log(`observed ${JSON.stringify({ keys: KEYS, locks: seed.locks, passes, load: currentLoad() })}`);
      }
    } finally {
      await agent.stop();
      viewer.close();
    }
  } finally {
    admin.disconnect();
    await dashboard.stop();
    dashboard.cleanup();
    await redis.stop();
  }
}

main().catch((err: unknown) => {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
