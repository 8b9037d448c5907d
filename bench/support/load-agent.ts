/**
 * A load agent for the ingest bench: its own process running the agent's real transport (DashboardLink and its
 * EventBuffer: snapshot on connect, batches of 1,000, an event leaves the buffer only when the dashboard
 * acknowledges it stored) fed by synthetic locks and events instead of Redis polls, since twenty agents polling real
 * servers could not produce tens of thousands of changes a second on two cores.
 *
 * It prepares everything, then waits for "go" on stdin, so the parent can start twenty at the same instant.
 *   LOAD_MODE=settle   publish LOAD_LOCKS locks and one buffered "acquired" event each; report when all are acked.
 *   LOAD_MODE=sustain  keep LOAD_BACKLOG events pending; after LOAD_WARMUP_MS measure LOAD_MEASURE_MS: events
 *                      acknowledged and each event's publish-to-acknowledgement latency.
 * Reports are JSON lines on stdout.
 */
import { randomBytes } from "node:crypto";
import { DashboardLink } from "../../agent/transport/dashboard-link";
import type { Lock, LockEvent, SourceStatus } from "../../lib/contract/lock";

const env = process.env;
const agentId = env.AGENT_ID ?? `load-${process.pid}`;
const lockCount = Number(env.LOAD_LOCKS ?? 5000);
const mode = env.LOAD_MODE ?? "settle";
const backlog = Number(env.LOAD_BACKLOG ?? 5000);
const warmupMs = Number(env.LOAD_WARMUP_MS ?? 5000);
const measureMs = Number(env.LOAD_MEASURE_MS ?? 15000);
const source = `redis://load-${agentId}:6379/0`;
const run = randomBytes(4).toString("hex");

function report(o: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ agentId, ...o })}\n`);
}

const now = new Date().toISOString();
const locks: Lock[] = Array.from({ length: lockCount }, (_, i) => ({
  id: `${agentId}-L${i}`,
  backend: "redis",
  source,
  resource: `orders:lock:${agentId}:${i}`,
  owner: randomBytes(10).toString("hex"),
  library: "generic",
  rule: "generic-token",
  ttlMs: 30_000,
  holder: null,
  waiters: [],
  since: now,
  observedAt: now,
  kind: "string",
  valuePreview: null,
  hazards: [],
  agentId,
}));
const sources = (): SourceStatus[] => [{ id: source, kind: "redis", up: true, locks: locks.length, agentId }];

let seq = 0;
function event(lock: Lock, type: LockEvent["type"]): LockEvent {
  return {
    id: `${run}-${agentId}-${seq++}`,
    agentId,
    type,
    lockId: lock.id,
    backend: "redis",
    source,
    resource: lock.resource,
    owner: lock.owner,
    library: "generic",
    ttlMs: 30_000,
    at: new Date().toISOString(),
    detail: type === "released" ? { observedBy: "poll", heldMs: 1500 } : { observedBy: "poll" },
  };
}

function start(): void {
  const t0 = performance.now();
  const link = new DashboardLink({
    dashboardUrl: env.DASHBOARD_URL!,
    agentToken: env.AGENT_TOKEN!,
    agentId,
    agentName: agentId,
    version: "bench",
    bufferEvents: Math.max(backlog * 4, lockCount * 2, 50_000),
    sources,
    locks: () => locks,
    log: (line) => {
      if (!/^connected to dashboard/.test(line)) process.stderr.write(`${agentId}: ${line}\n`);
    },
    release: async () => ({ outcome: "refused", message: "load agent", plan: [], perNode: [] }),
    ackTimeoutMs: 30_000,
  });

  if (mode === "settle") {
    // What an agent holds after a restart: every lock, and an event per lock not yet acknowledged.
    link.publish(
      locks.map((l) => event(l, "acquired")),
      [],
      [],
    );
    const check = setInterval(() => {
      if (link.pendingEvents === 0) {
        clearInterval(check);
        report({ type: "drained", ms: performance.now() - t0, events: lockCount });
      }
    }, 5);
    return;
  }

  // Sustain: a FIFO of (cumulative published count, publish time); acknowledged = published - pending.
  const fifo: Array<[number, number]> = [];
  let published = 0;
  let measuring = false;
  let ackedAtStart = 0;
  const latencies: number[] = [];
  let held = true;
  const topUp = () => {
    const want = backlog - link.pendingEvents;
    if (want <= 0) return;
    const batch: LockEvent[] = [];
    const changed: Lock[] = [];
    for (let i = 0; i < want; i++) {
      const lock = locks[(published + i) % locks.length]!;
      // Alternate releases and acquisitions so the rollups take counts of both.
      batch.push(event(lock, held ? "released" : "acquired"));
      if (i % 10 === 0) changed.push(lock);
    }
    held = !held;
    published += batch.length;
    fifo.push([published, performance.now()]);
    link.publish(batch, changed, []);
  };
  const settleAcks = () => {
    const acked = published - link.pendingEvents;
    const t = performance.now();
    while (fifo.length && fifo[0]![0] <= acked) {
      const [, at] = fifo.shift()!;
      if (measuring) latencies.push(t - at);
    }
    return acked;
  };
  const pump = setInterval(() => {
    settleAcks();
    topUp();
  }, 5);
  setTimeout(() => {
    measuring = true;
    ackedAtStart = settleAcks();
    const windowStart = performance.now();
    setTimeout(() => {
      const acked = settleAcks() - ackedAtStart;
      const seconds = (performance.now() - windowStart) / 1000;
      measuring = false;
      latencies.sort((a, b) => a - b);
      const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? null;
      report({
        type: "sustained",
        acked,
        seconds,
        perSecond: acked / seconds,
        ackLatencyMs: { p50: pct(0.5), p99: pct(0.99), max: latencies[latencies.length - 1] ?? null },
        samples: latencies.length,
      });
      // Keep the load on until the parent stops every agent, so no agent measures a lighter dashboard.
    }, measureMs);
  }, warmupMs);
  process.on("SIGTERM", () => {
    clearInterval(pump);
    link.close();
    process.exit(0);
  });
}

report({ type: "ready" });
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d: string) => {
  if (d.includes("go")) start();
});
process.on("SIGTERM", () => process.exit(0));
