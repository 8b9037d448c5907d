/**
 * 6. Ingest: many agents feeding one dashboard, on SQLite and on PostgreSQL, in one run.
 *   - Restart: 20 load agents holding 5,000 locks each (100,000 in all), each with one buffered event per lock,
 *     connect at the same instant; settled when every agent's buffer is acknowledged, the dashboard shows all
 *     100,000 locks (lockscope_locks_held) and the store holds exactly 100,000 of their events.
 *   - Sustained: the same 20 agents keep 5,000 events each pending; over a 15 s window (after 5 s of warm-up), the
 *     events acknowledged end to end per second (agent buffer -> socket -> store -> ack), the agents'
 *     publish-to-ack latency, the store's own write time (lockscope_store_write_seconds), dashboard CPU and RSS.
 * The load agents (bench/support/load-agent.ts) run the agent's real transport and buffer in their own processes
 * with synthetic locks instead of Redis polls.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { createTestDatabase } from "../tests/harness/postgres-server";
import { startDashboard, TEST_AGENT_TOKEN, TOKENS, type Dashboard } from "../tests/harness/stack";
import type { Cleanup } from "./support/cleanup";
import { currentLoad } from "./support/machine";
import { cpuBetween, cpuOfProcessesMatching, cpuSeconds, memoryKb, scriptProcess } from "./support/processes";
import { verdict, type Row, type SectionResult } from "./support/result";
import { mb, sleep } from "./support/stats";

const root = path.resolve(import.meta.dirname, "..");
const tsx = path.join(root, "node_modules", ".bin", "tsx");
const AGENTS = 20;
const LOCKS_PER_AGENT = 5000;
const BACKLOG = 2000;
const WARMUP_MS = 5000;
const MEASURE_MS = 15_000;
const TARGET_SETTLE_MS = 10_000;
const TARGET_PER_SECOND = { sqlite: 10_000, postgresql: 20_000 } as const;

type Provider = keyof typeof TARGET_PER_SECOND;

interface LoadAgent {
  id: string;
  process: ChildProcess;
  reports: Array<Record<string, unknown>>;
  stderr(): string;
}

function spawnLoadAgent(dashboardUrl: string, id: string, env: Record<string, string>): LoadAgent {
  const child = spawn(tsx, ["bench/support/load-agent.ts"], {
    cwd: root,
    env: { ...process.env, DASHBOARD_URL: dashboardUrl, AGENT_TOKEN: TEST_AGENT_TOKEN, AGENT_ID: id, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const agent: LoadAgent = { id, process: child, reports: [], stderr: () => err };
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    let nl: number;
    while ((nl = out.indexOf("\n")) !== -1) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      try {
        agent.reports.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a report line
      }
    }
  });
  child.stderr!.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  return agent;
}

async function stopAgents(agents: LoadAgent[]): Promise<void> {
  await Promise.all(
    agents.map(async (a) => {
      if (a.process.exitCode !== null || a.process.signalCode !== null) return;
      const exited = new Promise<void>((r) => a.process.once("exit", () => r()));
      a.process.kill("SIGTERM");
      await Promise.race([exited, sleep(5000)]);
      if (a.process.exitCode === null && a.process.signalCode === null) a.process.kill("SIGKILL");
    }),
  );
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 20) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(stepMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Sample of the metrics text: lockscope_locks_held{backend="redis",source="redis://…"} 5000 */
export function sumMetric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

/**
 * Cumulative histogram buckets of one metric, by upper bound:
 *   lockscope_store_write_seconds_bucket{le="0.05",provider="sqlite"} 812
 */
export function parseBuckets(text: string, name: string): Map<number, number> {
  const out = new Map<number, number>();
  const re = new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"[^}]*\\} (\\S+)$`, "gm");
  for (const m of text.matchAll(re)) out.set(m[1] === "+Inf" ? Infinity : Number(m[1]), Number(m[2]));
  return out;
}

/** The bucket bound under which p of the observations between two scrapes fall (null without observations). */
export function bucketQuantile(before: Map<number, number>, after: Map<number, number>, p: number): number | null {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  if (total <= 0) return null;
  for (const b of bounds) if ((after.get(b) ?? 0) - (before.get(b) ?? 0) >= p * total) return b;
  return Infinity;
}

async function metricsText(d: Dashboard): Promise<string> {
  const res = await fetch(`${d.url}/api/metrics`, { headers: { authorization: `Bearer ${TOKENS.viewer}` } });
  return res.text();
}

interface ProviderRun {
  provider: Provider;
  settleMs: number | null;
  settleError?: string;
  spawnToReadyMs: number;
  perSecond: number | null;
  ackP50Ms: number | null;
  ackP99Ms: number | null;
  storeP99Ms: number | null;
  storeP50Ms: number | null;
  dashboardCpuPct: number | null;
  /** Where the CPU went while sustained, in % of one core: the 20 load agents together, PostgreSQL's backends. */
  agentsCpuPct: number | null;
  postgresCpuPct: number | null;
  dashboardHwmKb: number | null;
  sustainError?: string;
}

async function runProvider(provider: Provider, cleanup: Cleanup, log: (line: string) => void): Promise<ProviderRun> {
  let databaseUrl: string | undefined;
  let databaseName: string | null = null;
  let countStored: () => Promise<number>;
  let dropDb: (() => Promise<void>) | null = null;
  let closeCounter: () => Promise<void> = async () => undefined;
  if (provider === "postgresql") {
    const db = await createTestDatabase();
    dropDb = cleanup.add(`database ${db.name}`, () => db.drop());
    databaseUrl = db.url;
    databaseName = db.name;
    const client = new pg.Client({ connectionString: db.url });
    let connected = false;
    countStored = async () => {
      if (!connected) {
        await client.connect();
        connected = true;
      }
      const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "Event"`);
      return Number(rows[0]!.n);
    };
    closeCounter = async () => {
      if (connected) await client.end();
    };
  } else {
    countStored = async () => 0; // replaced once the dashboard has made its file
  }
  const dashboard = await startDashboard({ env: databaseUrl ? { DATABASE_URL: databaseUrl } : {} });
  const stopDashboard = cleanup.add(`dashboard (${provider})`, async () => {
    await dashboard.stop();
    dashboard.cleanup();
  });
  if (provider === "sqlite") {
    const file = dashboard.databaseUrl.slice("file:".length);
    countStored = async () => {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        return (db.prepare(`SELECT count(*) AS n FROM "Event"`).get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
  }
  const dashPid = scriptProcess(dashboard.process.pid!, "lib/server/main.ts");
  const result: ProviderRun = {
    provider,
    settleMs: null,
    spawnToReadyMs: 0,
    perSecond: null,
    ackP50Ms: null,
    ackP99Ms: null,
    storeP99Ms: null,
    storeP50Ms: null,
    dashboardCpuPct: null,
    agentsCpuPct: null,
    postgresCpuPct: null,
    dashboardHwmKb: null,
  };
  const ids = Array.from({ length: AGENTS }, (_, i) => `bench-ingest-${provider}-${String(i).padStart(2, "0")}`);

  // Restart of every agent at once.
  try {
    const spawned = performance.now();
    const agents = ids.map((id) =>
      spawnLoadAgent(dashboard.url, id, { LOAD_MODE: "settle", LOAD_LOCKS: String(LOCKS_PER_AGENT) }),
    );
    const stop = cleanup.add(`load agents (${provider}, restart)`, () => stopAgents(agents));
    await until("load agents ready", () => agents.every((a) => a.reports.some((r) => r.type === "ready")), 120_000, 50);
    result.spawnToReadyMs = performance.now() - spawned;
    log(`${provider}: ${AGENTS} load agents ready after ${(result.spawnToReadyMs / 1000).toFixed(1)} s; go`);
    const t0 = performance.now();
    for (const a of agents) a.process.stdin!.write("go\n");
    const total = AGENTS * LOCKS_PER_AGENT;
    await until(
      "every lock shown and every buffered event stored once",
      async () =>
        agents.every((a) => a.reports.some((r) => r.type === "drained")) &&
        sumMetric(await metricsText(dashboard), "lockscope_locks_held") === total &&
        (await countStored()) === total,
      60_000,
      50,
    );
    result.settleMs = performance.now() - t0;
    log(`${provider}: settled in ${(result.settleMs / 1000).toFixed(2)} s`);
    await stop();
  } catch (err) {
    result.settleError = err instanceof Error ? err.message : String(err);
    log(`${provider}: restart run failed: ${result.settleError}`);
  }

  // Sustained ingest.
  try {
    const agents = ids.map((id) =>
      spawnLoadAgent(dashboard.url, `${id}-s`, {
        LOAD_MODE: "sustain",
        LOAD_LOCKS: String(LOCKS_PER_AGENT),
        LOAD_BACKLOG: String(BACKLOG),
        LOAD_WARMUP_MS: String(WARMUP_MS),
        LOAD_MEASURE_MS: String(MEASURE_MS),
      }),
    );
    const stop = cleanup.add(`load agents (${provider}, sustained)`, () => stopAgents(agents));
    await until("load agents ready", () => agents.every((a) => a.reports.some((r) => r.type === "ready")), 120_000, 50);
    for (const a of agents) a.process.stdin!.write("go\n");
    const agentPids = agents.map((a) => scriptProcess(a.process.pid!, "bench/support/load-agent.ts"));
    const agentsCpu = () => agentPids.reduce((n: number, p) => n + (p === null ? 0 : (cpuSeconds(p) ?? 0)), 0);
    // PostgreSQL's backends serving this database (its walwriter and checkpointer serve every database: left out).
    const pgBackends = () =>
      databaseName === null
        ? new Map<number, number>()
        : cpuOfProcessesMatching((cmd) => cmd.startsWith("postgres: ") && cmd.includes(` ${databaseName} `));
    await sleep(WARMUP_MS);
    const before = parseBuckets(await metricsText(dashboard), "lockscope_store_write_seconds");
    const cpu0 = dashPid === null ? null : cpuSeconds(dashPid);
    const agents0 = agentsCpu();
    const pg0 = pgBackends();
    const w0 = performance.now();
    await until(
      "every load agent's sustained report",
      () => agents.every((a) => a.reports.some((r) => r.type === "sustained")),
      MEASURE_MS + 60_000,
      100,
    );
    const cpu1 = dashPid === null ? null : cpuSeconds(dashPid);
    const agents1 = agentsCpu();
    const pg1 = pgBackends();
    const wallS = (performance.now() - w0) / 1000;
    result.agentsCpuPct = ((agents1 - agents0) / wallS) * 100;
    result.postgresCpuPct = databaseName === null ? null : (cpuBetween(pg0, pg1) / wallS) * 100;
    const after = parseBuckets(await metricsText(dashboard), "lockscope_store_write_seconds");
    await stop();
    const reports = agents.map((a) => a.reports.find((r) => r.type === "sustained")!) as Array<{
      perSecond: number;
      ackLatencyMs: { p50: number | null; p99: number | null };
    }>;
    result.perSecond = reports.reduce((n, r) => n + r.perSecond, 0);
    const p99s = reports.map((r) => r.ackLatencyMs.p99).filter((v): v is number => v !== null);
    const p50s = reports.map((r) => r.ackLatencyMs.p50).filter((v): v is number => v !== null);
    // The worst agent's p99 (agents are symmetric; the worst is the honest figure for "p99 across agents").
    result.ackP99Ms = p99s.length ? Math.max(...p99s) : null;
    result.ackP50Ms = p50s.length ? p50s.sort((a, b) => a - b)[Math.floor(p50s.length / 2)]! : null;
    const q99 = bucketQuantile(before, after, 0.99);
    const q50 = bucketQuantile(before, after, 0.5);
    result.storeP99Ms = q99 === null ? null : q99 * 1000;
    result.storeP50Ms = q50 === null ? null : q50 * 1000;
    result.dashboardCpuPct = cpu0 !== null && cpu1 !== null ? ((cpu1 - cpu0) / wallS) * 100 : null;
    log(
      `${provider}: ${Math.round(result.perSecond)} events/s acknowledged; ack p99 ${result.ackP99Ms?.toFixed(0)} ms; store p99 <= ${result.storeP99Ms} ms`,
    );
  } catch (err) {
    result.sustainError = err instanceof Error ? err.message : String(err);
    log(`${provider}: sustained run failed: ${result.sustainError}`);
  }
  result.dashboardHwmKb = dashPid === null ? null : memoryKb(dashPid).hwmKb;
  await closeCounter();
  await stopDashboard();
  await dropDb?.();
  return result;
}

const fmt = (n: number | null, unit: string, digits = 0) => (n === null ? "n/a" : `${n.toFixed(digits)} ${unit}`);
const per = (n: number | null) => (n === null ? "n/a" : `${Math.round(n).toLocaleString("en")} events/s`);

export async function measureIngest(ctx: { cleanup: Cleanup }, log: (line: string) => void): Promise<SectionResult> {
  const runs: ProviderRun[] = [];
  const loadAtStart = currentLoad();
  for (const provider of ["sqlite", "postgresql"] as const) runs.push(await runProvider(provider, ctx.cleanup, log));
  const rows: Row[] = [];
  const notes: string[] = [
    `Load average during the section: ${loadAtStart.toFixed(2)} at its start, ${currentLoad().toFixed(2)} at its end.`,
    `${AGENTS} load agents, each its own process running the agent's real DashboardLink and EventBuffer (batches of 1,000, one message in flight, an event kept until acknowledged stored) with synthetic locks and events instead of Redis polls; all on the same 2 cores as the dashboard and the database.`,
    `Restart: settled = every agent's buffer acknowledged, lockscope_locks_held = ${(AGENTS * LOCKS_PER_AGENT).toLocaleString("en")}, and exactly that many events in the store; timed from the instant the already-started agents were told to connect (their start-up, mostly tsx compiling, took ${runs.map((r) => `${(r.spawnToReadyMs / 1000).toFixed(1)} s`).join(" and ")} and is not included).`,
    `Sustained: each agent keeps ${BACKLOG.toLocaleString("en")} events pending; ${MEASURE_MS / 1000} s window after ${WARMUP_MS / 1000} s of warm-up. Ack latency is publish-to-acknowledgement per event at the agent, the worst agent's p99; store p99 is the upper bound of the lockscope_store_write_seconds bucket holding the 99th percentile of store writes in the window (with group commit, on by default, one write holds the messages of several agents that arrived while the previous write ran; STORE_GROUP_COMMIT=off writes each message alone).`,
    "Dashboard CPU is the dashboard process only. The load agents' and PostgreSQL's CPU are on their own rows: all three share the machine's 2 cores (200 % in all), with whatever else runs on it. PostgreSQL's figure counts the backends connected to the bench's database, not its shared walwriter and checkpointer.",
  ];
  for (const r of runs) {
    const name = r.provider === "sqlite" ? "SQLite" : "PostgreSQL";
    rows.push({
      measure: `${name}: restart of ${AGENTS} agents with ${(AGENTS * LOCKS_PER_AGENT).toLocaleString("en")} locks, to settled`,
      result: r.settleMs === null ? `failed: ${r.settleError ?? "?"}` : fmt(r.settleMs / 1000, "s", 2),
      target: "≤ 10 s",
      verdict: verdict(r.settleMs !== null && r.settleMs <= TARGET_SETTLE_MS),
    });
    rows.push({
      measure: `${name}: sustained ingest, acknowledged end to end`,
      result: r.perSecond === null ? `failed: ${r.sustainError ?? "?"}` : per(r.perSecond),
      target: `≥ ${TARGET_PER_SECOND[r.provider].toLocaleString("en")} events/s`,
      verdict: verdict(r.perSecond !== null && r.perSecond >= TARGET_PER_SECOND[r.provider]),
    });
    rows.push({
      measure: `${name}: store write (p50 / p99), ack latency per event (p50 / p99)`,
      result: `≤ ${fmt(r.storeP50Ms, "ms")} / ≤ ${fmt(r.storeP99Ms, "ms")}; ${fmt(r.ackP50Ms, "ms")} / ${fmt(r.ackP99Ms, "ms")}`,
    });
    rows.push({
      measure: `${name}: dashboard CPU while sustained, peak RSS of the run`,
      result: `${fmt(r.dashboardCpuPct, "% of a core")}, ${mb(r.dashboardHwmKb)}`,
    });
    rows.push({
      measure: `${name}: CPU of the ${AGENTS} load agents together${r.provider === "postgresql" ? ", of PostgreSQL's backends" : ""} while sustained`,
      result:
        r.provider === "postgresql"
          ? `${fmt(r.agentsCpuPct, "% of a core")}, ${fmt(r.postgresCpuPct, "% of a core")}`
          : fmt(r.agentsCpuPct, "% of a core"),
    });
  }
  const failed = runs.every((r) => r.settleMs === null && r.perSecond === null);
  return {
    id: "ingest",
    title: "Ingest from many agents",
    status: failed ? "failed" : "measured",
    rows,
    notes,
    details: { runs },
  };
}
