/**
 * 7. Several dashboards: a browser on dashboard B sees a change made through an agent connected to dashboard A.
 * Two dashboard processes on one PostgreSQL database (a fresh lockscope_test_<random>, dropped after) and one Redis
 * for the socket.io adapter (FANOUT_REDIS_URL); a real agent process on A watching its own redis-server; a viewer
 * socket (/ui, viewer token, as a browser tab) on each dashboard. 200 locks are SET by a test client at random gaps;
 * for each, the time from the SET to:
 *   - the "acquired" event (events:new) on B's viewer, and on A's for comparison;
 *   - the lock's row in a live view (view:update) on B, and on A, which is what the locks table shows.
 */
import { randomBytes } from "node:crypto";
import { createTestDatabase } from "../tests/harness/postgres-server";
import { startRedis } from "../tests/harness/redis";
import { startAgent, startDashboard, TOKENS, type Dashboard } from "../tests/harness/stack";
import type { KeyspaceNotificationSupport } from "./support/agent-features";
import type { Cleanup } from "./support/cleanup";
import { currentLoad } from "./support/machine";
import { cpuSeconds, scriptProcess } from "./support/processes";
import { verdict, type Row, type SectionResult } from "./support/result";
import { epochMs, ms, p50p99, sleep, summarize, type Summary } from "./support/stats";
import { connectViewer, type UiViewer } from "./support/ui-socket";

const LOCKS = 200;
/** Random gaps between SETs, so the SETs fall at every phase of the agent's and the dashboards' timers. */
const GAP_MS: [number, number] = [10, 90];
const TARGET_P99_MS = 100;
const AGENT_ID = "bench-fanout-agent";

type Seen = Map<string, number>;

/** Records, per resource under `prefix`, when it first arrived as an event and as a row of a live view. */
function watch(viewer: UiViewer, prefix: string): { events: Seen; rows: Seen; stop(): void } {
  const events: Seen = new Map();
  const rows: Seen = new Map();
  const offEvents = viewer.onEvents((list, at) => {
    for (const e of list) {
      if (e.type === "acquired" && e.resource.startsWith(prefix) && !events.has(e.resource)) events.set(e.resource, at);
    }
  });
  const offRows = viewer.onLocks(
    (locks, at) => {
      for (const l of locks) if (l.resource.startsWith(prefix) && !rows.has(l.resource)) rows.set(l.resource, at);
    },
    { q: prefix, limit: 1000 },
  );
  return {
    events,
    rows,
    stop() {
      offEvents();
      offRows();
    },
  };
}

function delays(setAt: Map<string, number>, seen: Seen): Summary {
  const out: number[] = [];
  for (const [key, t] of setAt) {
    const at = seen.get(key);
    if (at !== undefined) out.push(at - t);
  }
  return summarize(out);
}

export async function measureFanout(
  ctx: { cleanup: Cleanup },
  notifications: KeyspaceNotificationSupport,
  log: (line: string) => void,
): Promise<SectionResult> {
  const loadAtStart = currentLoad();
  const fanoutRedis = await startRedis();
  const stopFanoutRedis = ctx.cleanup.add("redis-server (fanout adapter)", () => fanoutRedis.stop());
  const watched = await startRedis();
  const stopWatched = ctx.cleanup.add("redis-server (fanout, watched)", () => watched.stop());
  const db = await createTestDatabase();
  const dropDb = ctx.cleanup.add(`database ${db.name}`, () => db.drop());
  const env = {
    DATABASE_URL: db.url,
    FANOUT_REDIS_URL: fanoutRedis.url,
    SESSION_SECRET: "bench-fanout-session-secret-0123456789abcdef",
  };
  const dashboards: Dashboard[] = [];
  const stopDashboards = ctx.cleanup.add("dashboards A and B", async () => {
    for (const d of dashboards) {
      await d.stop();
      d.cleanup();
    }
  });
  // One after the other: the second finds the migrations applied (inside the advisory lock either way).
  const a = await startDashboard({ env });
  dashboards.push(a);
  const b = await startDashboard({ env });
  dashboards.push(b);
  const viewerA = await connectViewer(a.url, TOKENS.viewer, log);
  const viewerB = await connectViewer(b.url, TOKENS.viewer, log);
  const stopViewers = ctx.cleanup.add("fanout viewers", () => {
    viewerA.close();
    viewerB.close();
  });
  const mode = notifications.on ? "keyspace notifications + polling 1000 ms" : "polling 250 ms";
  const agent = startAgent(a.url, {
    REDIS_URLS: watched.url,
    AGENT_ID,
    ...(notifications.on
      ? { KEYSPACE_NOTIFICATIONS: notifications.on, POLL_INTERVAL_MS: "1000" }
      : { POLL_INTERVAL_MS: "250" }),
  });
  const stopAgent = ctx.cleanup.add("agent on dashboard A", () => agent.stop());
  const client = watched.client();
  // A key name the agent's discovery takes for a lock (as event-latency.ts's).
  const prefix = `bench:lock:fanout-${randomBytes(3).toString("hex")}:`;
  const onA = watch(viewerA, prefix);
  const onB = watch(viewerB, prefix);
  try {
    // One lock through the whole path first: the agent is connected to A, and B relays what A's agent sends.
    const warmup = `${prefix}warmup`;
    await client.set(warmup, "warmup", "PX", 600_000);
    const deadline = Date.now() + 60_000;
    while (!(onB.events.has(warmup) && onB.rows.has(warmup))) {
      if (agent.process.exitCode !== null) throw new Error(`agent exited: ${agent.output().slice(-2000)}`);
      if (Date.now() > deadline) {
        const got = [onA.events, onA.rows, onB.events, onB.rows].map((m) => m.has(warmup));
        throw new Error(
          `the warm-up lock did not reach dashboard B within 60 s (event/row seen on A: ${got[0]}/${got[1]}, on B: ${got[2]}/${got[3]}); agent: ${agent.output().slice(-600)}`,
        );
      }
      await sleep(20);
    }
    if (b.output().includes(`agent ${AGENT_ID} connected`)) throw new Error("the agent connected to B, not only A");
    log(`fanout: ${LOCKS} locks SET ${GAP_MS[0]}-${GAP_MS[1]} ms apart, agent on A (${mode}), viewers on A and B`);
    const pids = [a, b].map((d) => scriptProcess(d.process.pid!, "lib/server/main.ts"));
    const cpu0 = pids.map((p) => (p === null ? null : cpuSeconds(p)));
    const w0 = performance.now();
    const setAt = new Map<string, number>();
    for (let i = 0; i < LOCKS; i++) {
      await sleep(GAP_MS[0] + Math.random() * (GAP_MS[1] - GAP_MS[0]));
      const key = `${prefix}${i}`;
      const t = epochMs();
      await client.set(key, randomBytes(12).toString("base64url"), "PX", 600_000, "NX");
      setAt.set(key, t);
    }
    const all = [onA.events, onA.rows, onB.events, onB.rows];
    const waitUntil = Date.now() + 10_000;
    while (Date.now() < waitUntil && [...setAt.keys()].some((k) => all.some((m) => !m.has(k)))) await sleep(20);
    const wallS = (performance.now() - w0) / 1000;
    const cpu = pids.map((p, i) => {
      const before = cpu0[i] ?? null;
      const after = p === null ? null : cpuSeconds(p);
      return before === null || after === null ? null : ((after - before) / wallS) * 100;
    });
    const loadAtEnd = currentLoad();
    const r = {
      eventsB: delays(setAt, onB.events),
      rowsB: delays(setAt, onB.rows),
      eventsA: delays(setAt, onA.events),
      rowsA: delays(setAt, onA.rows),
    };
    const line = (s: Summary) => `${p50p99(s, 0)}, max ${ms(s.max)} (${s.n}/${setAt.size})`;
    const met = (s: Summary) => verdict(s.n === setAt.size && s.p99 <= TARGET_P99_MS);
    log(`fanout: B events ${line(r.eventsB)}; B rows ${line(r.rowsB)}; A events ${line(r.eventsA)}`);
    const rows: Row[] = [
      {
        measure: "SET → the lock's row in a live view on dashboard B (agent on A)",
        result: line(r.rowsB),
        target: `p99 ≤ ${TARGET_P99_MS} ms`,
        verdict: met(r.rowsB),
      },
      {
        measure: "SET → the acquired event on dashboard B (agent on A)",
        result: line(r.eventsB),
        target: `p99 ≤ ${TARGET_P99_MS} ms`,
        verdict: met(r.eventsB),
      },
      {
        measure: "for comparison, on dashboard A (the agent's): the row / the event",
        result: `${line(r.rowsA)}; ${line(r.eventsA)}`,
      },
      {
        measure: "dashboards' CPU during the run (A / B)",
        result: cpu.map((c) => (c === null ? "n/a" : `${c.toFixed(0)} % of a core`)).join(" / "),
      },
    ];
    return {
      id: "fanout",
      title: "Several dashboards: a change seen on B",
      status: "measured",
      rows,
      notes: [
        `Load average during the section: ${loadAtStart.toFixed(2)} at its start, ${loadAtEnd.toFixed(2)} at its end.`,
        `Two dashboard processes (API only) on one PostgreSQL 15 database and one redis-server for the socket.io adapter; one agent process (${mode}) connected to A only, watching its own redis-server; a viewer socket (/ui, viewer token) on each dashboard with a live view filtered to the bench's keys.`,
        `${LOCKS} new locks SET NX by a test client ${GAP_MS[0]}-${GAP_MS[1]} ms apart. The row on B travels agent → A → the adapter's Redis (A hands the agent's live update to the other dashboards) → B's live state → B's view flush (at most every 40 ms per tab); the event on B is A's events:new broadcast after A stored it, delivered by the adapter.`,
      ],
      details: { locks: LOCKS, gapMs: GAP_MS, mode, ...r, dashboardCpuPct: cpu },
    };
  } finally {
    onA.stop();
    onB.stop();
    await stopAgent();
    await stopViewers();
    await stopDashboards();
    await dropDb();
    await stopWatched();
    await stopFanoutRedis();
  }
}
