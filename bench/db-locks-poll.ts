/**
 * `npm run bench:db-locks`: the server time of one PostgreSQL poll (PG_POLL_SQL) with many sessions and 5,000
 * advisory locks (target ≤ 10 ms). The machine's PostgreSQL is used as it is configured (its max_connections is
 * not changed): the bench opens as many sessions as the server allows with headroom for others, spreads the locks
 * over them, adds waiters, and times the statement with EXPLAIN ANALYZE and with the serving backend's own CPU time
 * (pg_stat_statements is not preloaded here), both with the lock rows sent in full and with them left out as unchanged
 * (the agent's signature is the server's).
 * Everything runs in its own database, dropped at the end, on errors too.
 *
 *   BENCH_POSTGRES_URL (default postgresql://root@127.0.0.1:5432/postgres), BENCH_DB_LOCKS (5000),
 *   BENCH_DB_SESSIONS (1000, capped by the server), BENCH_DB_REPEAT (30)
 */
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import pg from "pg";
import { loadDbLockSettings } from "../agent/sources/db-lock-settings";
import { NodePgPort } from "../agent/sources/postgres/pg-client";
import { PG_POLL_SQL } from "../agent/sources/postgres/pg-poll-sql";
import { PostgresSource } from "../agent/sources/postgres/pg-source";

const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? "postgresql://root@127.0.0.1:5432/postgres";
const LOCKS = Number(process.env.BENCH_DB_LOCKS ?? 5000);
const WANT_SESSIONS = Number(process.env.BENCH_DB_SESSIONS ?? 1000);
const REPEAT = Number(process.env.BENCH_DB_REPEAT ?? 30);
const WAITERS = 20;
const TARGET_MS = 10;
/** Connections left for everyone else on the shared server (and the superuser reserve). */
const HEADROOM = 15;

const log = (line: string) => process.stderr.write(`[bench db-locks] ${line}\n`);

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** The 1-minute load average at start, its highest while the bench ran (sampled each second), and at the end. */
function loadSampler(): { report(): { start: number; highest: number; end: number } } {
  const read = () => Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
  const start = read();
  let highest = start;
  const timer = setInterval(() => (highest = Math.max(highest, read())), 1000);
  timer.unref();
  return {
    report() {
      clearInterval(timer);
      const end = read();
      return { start, highest: Math.max(highest, end), end };
    },
  };
}

/**
 * One form of the poll statement timed two ways: EXPLAIN ANALYZE (REPEAT runs), and the CPU time of the server backend
 * that runs it (utime + stime in /proc, on this host; REPEAT * 3 runs, as clock ticks are 10 ms). EXPLAIN ANALYZE
 * leaves out sending the result; the backend's CPU counts everything the server spends on the statement.
 */
async function timeStatement(admin: pg.Client, backend: number, params: unknown[]) {
  const exec: number[] = [];
  const plan: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const r = await admin.query<{ "QUERY PLAN": Array<{ "Execution Time": number; "Planning Time": number }> }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${PG_POLL_SQL}`,
      params,
    );
    exec.push(r.rows[0]!["QUERY PLAN"][0]!["Execution Time"]);
    plan.push(r.rows[0]!["QUERY PLAN"][0]!["Planning Time"]);
  }
  exec.sort((a, b) => a - b);
  plan.sort((a, b) => a - b);
  const statPath = `/proc/${backend}/stat`;
  let cpuPerPollMs: number | null = null;
  if (existsSync(statPath)) {
    const cpuMs = () => {
      const f = readFileSync(statPath, "utf8").split(") ")[1]!.split(" ");
      return (Number(f[11]) + Number(f[12])) * 10;
    };
    const runs = REPEAT * 3;
    const before = cpuMs();
    for (let i = 0; i < runs; i++) await admin.query(PG_POLL_SQL, params);
    cpuPerPollMs = (cpuMs() - before) / runs;
  }
  return {
    executionMs: { p50: quantile(exec, 0.5), p95: quantile(exec, 0.95), max: exec.at(-1) },
    planningMs: { p50: quantile(plan, 0.5), max: plan.at(-1) },
    backendCpuPerPollMs: cpuPerPollMs,
  };
}

async function main(): Promise<void> {
  const load = loadSampler();
  const name = `lockscope_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  const sessions: pg.Client[] = [];
  let port: NodePgPort | null = null;
  try {
    const facts = await admin.query<{ max: string; reserved: string; used: string; version: string }>(
      "SELECT current_setting('max_connections') AS max, current_setting('superuser_reserved_connections') AS reserved, (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::text AS used, version() AS version",
    );
    const f = facts.rows[0]!;
    const allowed = Number(f.max) - Number(f.reserved) - Number(f.used) - HEADROOM;
    const nSessions = Math.max(2, Math.min(WANT_SESSIONS, allowed));
    log(`${f.version.split(",")[0]}; max_connections ${f.max}, ${f.used} in use: opening ${nSessions} sessions`);
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    for (let i = 0; i < nSessions; i++) {
      const c = new pg.Client({ connectionString: url.toString(), application_name: `bench-${i}` });
      c.on("error", () => undefined);
      await c.connect();
      sessions.push(c);
    }
    // Holders: the locks spread evenly; the last sessions wait on keys already held (pg_blocking_pids has work).
    const holders = sessions.slice(0, Math.max(1, nSessions - WAITERS));
    const waiters = sessions.slice(holders.length);
    const per = Math.ceil(LOCKS / holders.length);
    let taken = 0;
    for (const [i, c] of holders.entries()) {
      const from = i * per + 1;
      const to = Math.min(LOCKS, (i + 1) * per);
      if (from > to) break;
      await c.query("SELECT count(pg_advisory_lock(k)) FROM generate_series($1::bigint, $2::bigint) k", [from, to]);
      taken += to - from + 1;
    }
    const pending = waiters.map((c, i) => c.query("SELECT pg_advisory_lock($1::bigint)", [1 + i * per]));
    pending.forEach((p) => p.catch(() => undefined));
    // The waiters' calls are in flight: count them once they all wait (within 10 s), so every timed run sees the same
    // table (the count it printed before raced them, e.g. 16 or 18 of 20).
    const count = () =>
      admin.query<{ n: string; w: string }>(
        "SELECT count(*) FILTER (WHERE granted)::text AS n, count(*) FILTER (WHERE NOT granted)::text AS w FROM pg_locks WHERE locktype = 'advisory'",
      );
    let counted = await count();
    for (const deadline = Date.now() + 10_000; Number(counted.rows[0]!.w) < waiters.length && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 50));
      counted = await count();
    }
    log(`${counted.rows[0]!.n} advisory locks held, ${counted.rows[0]!.w} waiting (asked for ${taken})`);

    const settings = loadDbLockSettings({});
    const backend = (await admin.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    const signature = (
      await admin.query<{ snapshot: { signature: string } }>(PG_POLL_SQL, [
        settings.maxLocks,
        settings.queryChars,
        null,
      ])
    ).rows[0]!.snapshot.signature;
    // Two cases: the rows sent in full (a poll after any change, and once a minute), and the rows left out because
    // the agent's signature is the server's (a poll of an unchanged lock table).
    const full = await timeStatement(admin, backend, [settings.maxLocks, settings.queryChars, null]);
    const unchanged = await timeStatement(admin, backend, [settings.maxLocks, settings.queryChars, signature]);

    // The whole poll as the agent runs it: round trip, JSON parse, model and tracker.
    port = new NodePgPort({ url: ADMIN_URL, statementTimeoutMs: 2000, connectTimeoutMs: 2000 });
    const source = new PostgresSource(port, {
      sourceId: "postgresql://bench",
      agentId: "bench",
      newId: randomUUID,
      log,
      settings,
    });
    await source.poll();
    const polls: number[] = [];
    for (let i = 0; i < REPEAT; i++) {
      const t = performance.now();
      await source.poll();
      polls.push(performance.now() - t);
    }
    polls.sort((a, b) => a - b);
    const locksSeen = source.locks().filter((l) => l.resource.startsWith(`${name}:`)).length;
    const bytes = JSON.stringify(await port.snapshot(settings.maxLocks, settings.queryChars, null)).length;
    const unchangedBytes = JSON.stringify(
      await port.snapshot(settings.maxLocks, settings.queryChars, signature),
    ).length;
    const result = {
      server: f.version.split(",")[0],
      maxConnections: Number(f.max),
      sessions: nSessions,
      advisoryLocksHeld: Number(counted.rows[0]!.n),
      waiters: Number(counted.rows[0]!.w),
      locksSeenByAgent: locksSeen,
      repeat: REPEAT,
      full,
      unchanged,
      agentPollMs: { p50: quantile(polls, 0.5), p95: quantile(polls, 0.95), max: polls.at(-1) },
      snapshotBytes: { full: bytes, unchanged: unchangedBytes },
      targetMs: TARGET_MS,
      met: {
        full: full.backendCpuPerPollMs !== null && full.backendCpuPerPollMs <= TARGET_MS,
        unchanged: unchanged.backendCpuPerPollMs !== null && unchanged.backendCpuPerPollMs <= TARGET_MS,
      },
      loadAverage1m: load.report(),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await port?.close().catch(() => undefined);
    // FORCE first: it ends the sessions, waiters included (a client's end() would wait for a blocked lock call).
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((e: unknown) => log(`drop: ${String(e)}`));
    await Promise.all(sessions.map((c) => c.end().catch(() => undefined)));
    await admin.end();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench db-locks: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
