/**
 * 3. Event latency: from a test client's SET of a lock to the "acquired" event reaching a viewer of the real
 * dashboard (/ui socket, viewer token), through the real agent process, its poll, the socket to the dashboard and
 * the dashboard's store.
 */
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { RedisServer } from "../tests/harness/redis";
import { startAgent, type Dashboard } from "../tests/harness/stack";
import type { KeyspaceNotificationSupport } from "./support/agent-features";
import type { Cleanup } from "./support/cleanup";
import { memoryKb, scriptProcess } from "./support/processes";
import { verdict, type Row, type SectionResult } from "./support/result";
import { epochMs, mb, ms, p50p99, sleep, summarize, type Summary } from "./support/stats";
import type { UiViewer } from "./support/ui-socket";

const LOCKS = 200;
/** Random gaps between SETs, so the SETs fall at every phase of the poll cycle. */
const GAP_MS: [number, number] = [10, 90];
const TARGET_NOTIFY_P99_MS = 100;

interface Received {
  atMs: number;
  observedAtMs: number;
  observedBy: string;
}

interface RunResult {
  label: string;
  env: Record<string, string>;
  sent: number;
  received: number;
  /** SET to the event on the viewer's socket. */
  endToEnd: Summary;
  /** SET to the agent's observation (the event's `at`, millisecond resolution). */
  toObservation: Summary;
  /** The agent's observation to the event on the viewer's socket: publish, agent → dashboard, store, broadcast. */
  delivery: Summary;
  observedBy: Record<string, number>;
  /** Peak RSS of the agent process at the end of the run: the footprint with a few hundred locks. */
  agentHwmKb: number | null;
}

async function latencyRun(
  ctx: { dashboard: Dashboard; viewer: UiViewer; redis: RedisServer; client: Redis; cleanup: Cleanup },
  label: string,
  env: Record<string, string>,
  pollIntervalMs: number,
  log: (line: string) => void,
): Promise<RunResult> {
  await ctx.client.flushall();
  const agentId = `bench-events-${label.replace(/[^A-Za-z0-9]+/g, "-")}`;
  const prefix = `bench:lock:${agentId}:`;
  const received = new Map<string, Received>();
  const unsubscribe = ctx.viewer.onEvents((events, atMs) => {
    for (const ev of events) {
      if (
        ev.agentId !== agentId ||
        ev.type !== "acquired" ||
        !ev.resource.startsWith(prefix) ||
        received.has(ev.resource)
      )
        continue;
      received.set(ev.resource, {
        atMs,
        observedAtMs: Date.parse(ev.at),
        observedBy: String(ev.detail?.observedBy ?? "unstated"),
      });
    }
  });
  const agent = startAgent(ctx.dashboard.url, {
    REDIS_URLS: ctx.redis.url,
    AGENT_ID: agentId,
    POLL_INTERVAL_MS: String(pollIntervalMs),
    ...env,
  });
  const stopAgent = ctx.cleanup.add(`agent ${agentId}`, () => agent.stop());
  try {
    // One lock end to end first: the agent is connected, has polled, and the dashboard relays its events.
    const warmup = `${prefix}warmup`;
    await ctx.client.set(warmup, "warmup", "PX", 600_000);
    const deadline = Date.now() + 60_000;
    while (!received.has(warmup)) {
      if (agent.process.exitCode !== null) throw new Error(`agent exited: ${agent.output().slice(-2000)}`);
      if (Date.now() > deadline)
        throw new Error(`the agent's first event did not arrive within 60 s: ${agent.output().slice(-2000)}`);
      await sleep(20);
    }
    log(`${label}: ${LOCKS} locks, SETs ${GAP_MS[0]}-${GAP_MS[1]} ms apart`);
    const setAt = new Map<string, number>();
    for (let i = 0; i < LOCKS; i++) {
      await sleep(GAP_MS[0] + Math.random() * (GAP_MS[1] - GAP_MS[0]));
      const key = `${prefix}${i}`;
      const t = epochMs();
      await ctx.client.set(key, randomBytes(12).toString("base64url"), "PX", 600_000, "NX");
      setAt.set(key, t);
    }
    const waitUntil = Date.now() + pollIntervalMs * 3 + 5000;
    while (Date.now() < waitUntil && [...setAt.keys()].some((k) => !received.has(k))) await sleep(20);

    const endToEnd: number[] = [];
    const toObservation: number[] = [];
    const delivery: number[] = [];
    const observedBy: Record<string, number> = {};
    for (const [key, t] of setAt) {
      const r = received.get(key);
      if (!r) continue;
      endToEnd.push(r.atMs - t);
      toObservation.push(r.observedAtMs - t);
      delivery.push(r.atMs - r.observedAtMs);
      observedBy[r.observedBy] = (observedBy[r.observedBy] ?? 0) + 1;
    }
    const agentPid = scriptProcess(agent.process.pid!, "agent/main.ts");
    return {
      label,
      env,
      agentHwmKb: agentPid === null ? null : memoryKb(agentPid).hwmKb,
      sent: setAt.size,
      received: endToEnd.length,
      endToEnd: summarize(endToEnd),
      toObservation: summarize(toObservation),
      delivery: summarize(delivery),
      observedBy,
    };
  } finally {
    unsubscribe();
    await stopAgent();
  }
}

export async function measureEventLatency(
  ctx: { dashboard: Dashboard; viewer: UiViewer; redis: RedisServer; cleanup: Cleanup },
  notifications: KeyspaceNotificationSupport,
  log: (line: string) => void,
): Promise<SectionResult> {
  const client = ctx.redis.client();
  const run = { ...ctx, client };
  const pollingOnly: Record<string, string> = notifications.off ? { KEYSPACE_NOTIFICATIONS: notifications.off } : {};
  const runs: RunResult[] = [];
  runs.push(await latencyRun(run, "polling 1000 ms", pollingOnly, 1000, log));
  runs.push(await latencyRun(run, "polling 250 ms", pollingOnly, 250, log));
  if (notifications.on) {
    // The bench's own throwaway server: start from Redis's default (nothing published) and let the agent opt in.
    await client.config("SET", "notify-keyspace-events", "");
    runs.push(
      await latencyRun(
        run,
        "keyspace notifications + polling 1000 ms",
        { KEYSPACE_NOTIFICATIONS: notifications.on },
        1000,
        log,
      ),
    );
  }

  const describe = (r: RunResult) =>
    `${p50p99(r.endToEnd, 0)}, max ${ms(r.endToEnd.max)} (${r.received}/${r.sent} events)`;
  const rows: Row[] = runs.map((r) => {
    const row: Row = { measure: `SET → dashboard event, ${r.label}`, result: describe(r) };
    if (r.label.startsWith("keyspace")) {
      row.target = `p99 ≤ ${TARGET_NOTIFY_P99_MS} ms`;
      row.verdict = verdict(r.received === r.sent && r.endToEnd.p99 <= TARGET_NOTIFY_P99_MS);
    }
    return row;
  });
  if (!notifications.on) {
    rows.push({
      measure: "SET → dashboard event, keyspace notifications",
      result: "not measured: KEYSPACE_NOTIFICATIONS is not in agent/config.ts yet",
      target: `p99 ≤ ${TARGET_NOTIFY_P99_MS} ms`,
    });
  }
  const notes = [
    "Each run starts a fresh agent process (tsx agent/main.ts) against a small redis-server holding only these locks, streaming to one dashboard process (API only, SQLite store); the viewer is a socket.io client on /ui with the viewer token.",
    "With polling only, a SET waits for the next poll: uniformly 0 to one interval, then the poll's own time, the agent → dashboard message, the store's commit and the broadcast. The agent-side part (SET → the event's `at`) is in latest.json per run.",
    "These servers are small, so every poll completes a SCAN pass. On a large keyspace a new key is found when the paced cursor reaches it (see the discovery section: up to one paced pass); keyspace notifications remove that wait.",
    ...runs.map(
      (r) =>
        `${r.label}: SET → agent observation ${p50p99(r.toObservation, 0)}; observation → viewer ${p50p99(r.delivery, 0)}; agent peak RSS ${mb(r.agentHwmKb)}; events observed by ${Object.entries(
          r.observedBy,
        )
          .map(([k, v]) => `${k} ${v}`)
          .join(", ")}.`,
    ),
  ];
  return {
    id: "events",
    title: "Event latency",
    status: "measured",
    rows,
    notes,
    details: { locksPerRun: LOCKS, gapMs: GAP_MS, runs, notifications },
  };
}
