/**
 * The agent's Redis watching, in this process: the real RedisSource over the real ioredis port, driven either
 * flat out (one poll scans everything) or by the real AgentLoop with the agent's pacing. Nothing is re-implemented
 * here; the numbers are the source's own.
 */
import { randomUUID } from "node:crypto";
import { AgentLoop } from "../../agent/agent";
import { DEFAULT_LOCK_PATTERNS, parseRedisTarget } from "../../agent/config";
import { LeanCompanion } from "../../agent/sources/redis/lean-connection";
import { connectRedis, IoredisLockPort } from "../../agent/sources/redis/redis-client";
import { RedisSource } from "../../agent/sources/redis/redis-source";

/** The agent's defaults (agent/config.ts): POLL_INTERVAL_MS, MAX_KEY_VISITS_PER_SEC, VALUE_PREVIEW_BYTES, COMMAND_TIMEOUT_MS. */
export const AGENT_DEFAULTS = {
  pollIntervalMs: 1000,
  maxKeyVisitsPerSec: 100_000,
  valuePreviewBytes: 256,
  commandTimeoutMs: 2000,
};

export interface DiscoveryRun {
  /** From the first poll's start until a full SCAN pass had completed and `expected` locks were tracked. */
  wallMs: number;
  polls: number;
  tracked: number;
  /** The source's own lastScanMs: how long its SCAN pass took, start to cursor 0. */
  passMs: number | null;
  completed: boolean;
}

async function openSource(url: string, visitBudgetPerPoll: number, scanCount: number) {
  const ref: { source?: RedisSource } = {};
  const client = connectRedis({
    url,
    commandTimeoutMs: AGENT_DEFAULTS.commandTimeoutMs,
    onStatus: (up, error) => ref.source?.setConnection(up, error),
  });
  await client.connect();
  // As the agent reads in poll mode: the bulk reads on the reader's lean connection (redis-sources.ts).
  const lean = new LeanCompanion(client, { tracked: false, commandTimeoutMs: AGENT_DEFAULTS.commandTimeoutMs });
  const source = (ref.source = new RedisSource(new IoredisLockPort(client, lean), {
    sourceId: parseRedisTarget("REDIS_URLS", url).id,
    agentId: "bench",
    lockPatterns: DEFAULT_LOCK_PATTERNS,
    scanCount,
    visitBudgetPerPoll,
    valuePreviewBytes: AGENT_DEFAULTS.valuePreviewBytes,
    newId: randomUUID,
  }));
  return { source, close: () => client.disconnect() };
}

function done(source: RedisSource, expected: number): boolean {
  return source.status().lastScanMs !== undefined && source.tracker.size >= expected;
}

/** Polls back to back (no pacing) until a full pass is done and `expected` locks are tracked. */
export async function fullDiscovery(
  url: string,
  opts: { visitBudgetPerPoll: number; scanCount: number; expected: number; timeoutMs: number },
): Promise<DiscoveryRun> {
  const { source, close } = await openSource(url, opts.visitBudgetPerPoll, opts.scanCount);
  try {
    const started = performance.now();
    let polls = 0;
    while (polls < 10_000 && performance.now() - started < opts.timeoutMs) {
      await source.poll();
      polls++;
      const status = source.status();
      if (!status.up) throw new Error(`source down during discovery: ${status.error ?? "unknown"}`);
      if (done(source, opts.expected)) break;
    }
    const status = source.status();
    return {
      wallMs: performance.now() - started,
      polls,
      tracked: source.tracker.size,
      passMs: status.lastScanMs ?? null,
      completed: done(source, opts.expected),
    };
  } finally {
    close();
  }
}

/**
 * The agent's production pacing: AgentLoop at pollIntervalMs with visitBudgetPerPoll = maxKeyVisitsPerSec ×
 * interval (as agent/main.ts computes it). Stops when discovery is complete, or after stopAfterMs if given.
 */
export async function pacedDiscovery(
  url: string,
  opts: {
    maxKeyVisitsPerSec: number;
    pollIntervalMs: number;
    expected: number;
    timeoutMs: number;
    stopAfterMs?: number;
  },
): Promise<DiscoveryRun> {
  const budget = Math.round((opts.maxKeyVisitsPerSec * opts.pollIntervalMs) / 1000);
  const { source, close } = await openSource(url, budget, 1000);
  let polls = 0;
  let resolveDone: () => void = () => undefined;
  const finished = new Promise<void>((r) => (resolveDone = r));
  const loop = new AgentLoop(
    [{ status: () => source.status(), poll: () => source.poll(), locks: () => source.tracker.locks() }],
    {
      publish: () => {
        polls++;
        if (done(source, opts.expected)) resolveDone();
      },
    },
    { agentId: "bench", pollIntervalMs: opts.pollIntervalMs, log: () => undefined },
  );
  const started = performance.now();
  const limit = Math.min(opts.timeoutMs, opts.stopAfterMs ?? Number.POSITIVE_INFINITY);
  let timer: NodeJS.Timeout | undefined;
  try {
    loop.start();
    await Promise.race([finished, new Promise<void>((r) => (timer = setTimeout(r, limit)))]);
    const wallMs = performance.now() - started;
    loop.stop();
    const status = source.status();
    return {
      wallMs,
      polls,
      tracked: source.tracker.size,
      passMs: status.lastScanMs ?? null,
      completed: done(source, opts.expected),
    };
  } finally {
    clearTimeout(timer);
    loop.stop();
    // A poll may still be in flight: let it end on a closed connection (it reports the source down, nothing else).
    close();
  }
}
