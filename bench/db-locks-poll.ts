/**
 * `npm run bench:db-locks`: the server time of one PostgreSQL poll (PG_POLL_SQL) with 1,000 sessions and 5,000
 * advisory locks (target ≤ 10 ms). It runs twice by default (BENCH_DB_SERVERS=private,shared):
 * - on a private PostgreSQL 15 cluster it starts itself (initdb in a temp directory, as the postgres user when run as
 *   root, a free loopback port, max_connections 1100), stopped and deleted at the end, on errors too;
 * - on the machine's shared PostgreSQL as it is configured (its max_connections is not changed): as many sessions as
 *   it allows with headroom for others.
 * Each run spreads the locks over the sessions, adds waiters, and times the statement with EXPLAIN ANALYZE and with the
 * serving backend's own CPU time (pg_stat_statements is not preloaded here) as the agent runs it (its named prepared
 * statement, on a connection with the agent's session settings: a generic plan) in five cases: everything sent (a first
 * poll); every bucket of lock rows sent but the sessions known; one lock changed since the last poll (a holder took
 * one more key), as the agent asks (with the bucket and session slice it asks for again in turn); unchanged, as the
 * agent asks; and unchanged asking nothing again. Then the agent's whole poll, unchanged and with one lock taken or
 * released before each poll. Everything runs in its own database, dropped at the end, on errors too.
 *
 *   BENCH_POSTGRES_URL (the shared server; default postgresql://root@127.0.0.1:5432/postgres), BENCH_DB_LOCKS (5000),
 *   BENCH_DB_SESSIONS (1000, capped by the server), BENCH_DB_REPEAT (30), BENCH_DB_SERVERS (private,shared),
 *   BENCH_DB_BASELINE (a module whose PG_POLL_SQL, taking $1-$3, $1-$4 or $1-$5 with one signature of all the lock
 *   rows, or $1-$6 with the buckets as now, is timed beside the current one in the same rounds, as a plain statement
 *   on a connection with default settings: in full, rows sent, one lock changed, unchanged; with $6, in the five
 *   cases the current one is timed in)
 */
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import pg from "pg";
import { loadDbLockSettings } from "../agent/sources/db-lock-settings";
import { NodePgPort, pgPollQuery, pgSessionOptions } from "../agent/sources/postgres/pg-client";
import { PG_LOCK_BUCKETS, PG_POLL_SQL } from "../agent/sources/postgres/pg-poll-sql";
import { parsePgSnapshot, pgPollAsk, type KnownPgLocks, type PgPollAsk } from "../agent/sources/postgres/pg-snapshot";
import { PostgresSource } from "../agent/sources/postgres/pg-source";
import { startPrivatePostgres } from "../tests/harness/postgres-server";

const SHARED_URL = process.env.BENCH_POSTGRES_URL ?? "postgresql://root@127.0.0.1:5432/postgres";
const LOCKS = Number(process.env.BENCH_DB_LOCKS ?? 5000);
const WANT_SESSIONS = Number(process.env.BENCH_DB_SESSIONS ?? 1000);
const REPEAT = Number(process.env.BENCH_DB_REPEAT ?? 30);
const SERVERS = (process.env.BENCH_DB_SERVERS ?? "private,shared").split(",").map((x) => x.trim());
const BASELINE = process.env.BENCH_DB_BASELINE;
const WAITERS = 20;
const TARGET_MS = 10;
/** Connections left for everyone else on the shared server (and the superuser reserve). */
const HEADROOM = 15;
/** The private cluster's max_connections: 1,000 sessions, the bench's own and the reserve. */
const PRIVATE_MAX_CONNECTIONS = 1100;

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

/** A connection the bench times statements on, and the pid of the server backend that serves it. */
interface Timed {
  client: pg.Client;
  backend: number;
}

/**
 * One form of the poll statement: its SQL and parameters, and the connection it runs on. `prepared`: run as the agent
 * runs PG_POLL_SQL (its named statement, on a connection with the agent's session settings, so a generic plan); else
 * as a plain statement (parsed and planned at each run, as the agent ran it before).
 */
interface StatementCase {
  sql: string;
  params: unknown[];
  on: Timed;
  prepared?: boolean;
}

const ROUNDS = 3;

/**
 * Every case timed two ways, in ROUNDS rounds that take the cases in turn (each round starting one case later), so
 * that none is always first after the setup or last: EXPLAIN ANALYZE (REPEAT / ROUNDS runs a round), and the CPU time
 * of the server backend that runs it (utime + stime in /proc, on this host; REPEAT runs a round, as clock ticks are
 * 10 ms). EXPLAIN ANALYZE leaves out sending the result; the backend's CPU counts everything the server spends on the
 * statement. The CPU figure is the median of the rounds; each round's is listed too.
 */
async function timeCases<K extends string>(cases: Record<K, StatementCase>) {
  const names = Object.keys(cases) as K[];
  const exec = new Map<K, number[]>(names.map((n) => [n, []]));
  const plan = new Map<K, number[]>(names.map((n) => [n, []]));
  const cpu = new Map<K, number[]>(names.map((n) => [n, []]));
  const cpuMs = (statPath: string) => {
    const f = readFileSync(statPath, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length]!;
      const { sql, params, on, prepared } = cases[name];
      const statPath = `/proc/${on.backend}/stat`;
      // On the agent's connection EXPLAIN plans the statement as the named one runs (a generic plan): its planning time
      // is what preparing costs once, not what a poll pays.
      for (let j = 0; j < Math.ceil(REPEAT / ROUNDS); j++) {
        const r = await on.client.query<{ "QUERY PLAN": Array<{ "Execution Time": number; "Planning Time": number }> }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
          params,
        );
        exec.get(name)!.push(r.rows[0]!["QUERY PLAN"][0]!["Execution Time"]);
        plan.get(name)!.push(r.rows[0]!["QUERY PLAN"][0]!["Planning Time"]);
      }
      if (existsSync(statPath)) {
        const before = cpuMs(statPath);
        for (let j = 0; j < REPEAT; j++)
          await (prepared ? on.client.query(pgPollQuery(params)) : on.client.query(sql, params));
        cpu.get(name)!.push((cpuMs(statPath) - before) / REPEAT);
      }
    }
  }
  const out = {} as Record<
    K,
    {
      executionMs: { p50: number; p95: number; max: number | undefined };
      planningMs: { p50: number; max: number | undefined };
      backendCpuPerPollMs: number | null;
      backendCpuPerRoundMs: number[];
    }
  >;
  for (const n of names) {
    const e = exec.get(n)!.sort((a, b) => a - b);
    const p = plan.get(n)!.sort((a, b) => a - b);
    const c = cpu.get(n)!;
    out[n] = {
      executionMs: { p50: quantile(e, 0.5), p95: quantile(e, 0.95), max: e.at(-1) },
      planningMs: { p50: quantile(p, 0.5), max: p.at(-1) },
      backendCpuPerPollMs:
        c.length > 0
          ? quantile(
              [...c].sort((a, b) => a - b),
              0.5,
            )
          : null,
      backendCpuPerRoundMs: c,
    };
  }
  return out;
}

/** Opens the sessions a few dozen at a time (each connect forks a backend). */
async function openSessions(url: string, n: number): Promise<pg.Client[]> {
  const sessions: pg.Client[] = [];
  for (let i = 0; i < n; i += 50) {
    const batch = Array.from({ length: Math.min(50, n - i) }, (_, j) => {
      const c = new pg.Client({ connectionString: url, application_name: `bench-${i + j}` });
      c.on("error", () => undefined);
      sessions.push(c);
      return c.connect();
    });
    await Promise.all(batch);
  }
  return sessions;
}

/** One run on one server: its own database, the sessions, the locks and waiters, then the timings. */
async function benchOn(serverUrl: string, where: string) {
  const load = loadSampler();
  const name = `lockscope_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  let sessions: pg.Client[] = [];
  let port: NodePgPort | null = null;
  let agentConn: pg.Client | null = null;
  let created = false;
  try {
    const facts = await admin.query<{ max: string; reserved: string; used: string; version: string }>(
      "SELECT current_setting('max_connections') AS max, current_setting('superuser_reserved_connections') AS reserved, (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::text AS used, version() AS version",
    );
    const f = facts.rows[0]!;
    const allowed = Number(f.max) - Number(f.reserved) - Number(f.used) - HEADROOM;
    const nSessions = Math.max(2, Math.min(WANT_SESSIONS, allowed));
    log(
      `${where}: ${f.version.split(",")[0]}; max_connections ${f.max}, ${f.used} in use: opening ${nSessions} sessions`,
    );
    await admin.query(`CREATE DATABASE ${name}`);
    created = true;
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    sessions = await openSessions(url.toString(), nSessions);
    // Holders: the locks spread evenly (5 or 6 each at 1,000 sessions); the last sessions wait on keys already held
    // (pg_blocking_pids has work).
    const holders = sessions.slice(0, Math.max(1, nSessions - WAITERS));
    const waiters = sessions.slice(holders.length);
    const firstKey = (i: number) => Math.floor((i * LOCKS) / holders.length) + 1;
    let taken = 0;
    for (let i = 0; i < holders.length; i += 50) {
      await Promise.all(
        holders.slice(i, i + 50).map((c, j) => {
          const from = firstKey(i + j);
          const to = firstKey(i + j + 1) - 1;
          if (from > to) return Promise.resolve();
          taken += to - from + 1;
          return c.query("SELECT count(pg_advisory_lock(k)) FROM generate_series($1::bigint, $2::bigint) k", [
            from,
            to,
          ]);
        }),
      );
    }
    const pending = waiters.map((c, i) => c.query("SELECT pg_advisory_lock($1::bigint)", [firstKey(i)]));
    pending.forEach((p) => p.catch(() => undefined));
    // The waiters' calls are in flight: count them once they all wait (within 10 s), so every timed run sees the same
    // table (the count it printed before raced them, e.g. 16 or 18 of 20).
    const count = () =>
      admin.query<{ n: string; w: string; backends: string }>(
        "SELECT count(*) FILTER (WHERE granted)::text AS n, count(*) FILTER (WHERE NOT granted)::text AS w, (SELECT count(*) FROM pg_stat_activity)::text AS backends FROM pg_locks WHERE locktype = 'advisory'",
      );
    let counted = await count();
    for (const deadline = Date.now() + 10_000; Number(counted.rows[0]!.w) < waiters.length && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 50));
      counted = await count();
    }
    const c0 = counted.rows[0]!;
    log(`${where}: ${c0.n} advisory locks held, ${c0.w} waiting (asked for ${taken}); ${c0.backends} backends`);

    const settings = loadDbLockSettings({});
    const backendOf = async (c: pg.Client) =>
      (await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    const plain: Timed = { client: admin, backend: await backendOf(admin) };
    // The current statement is timed as the agent runs it: its named statement, on a connection with its settings.
    agentConn = new pg.Client({ connectionString: serverUrl, options: pgSessionOptions(settings.statementTimeoutMs) });
    await agentConn.connect();
    const asAgent: Timed = { client: agentConn, backend: await backendOf(agentConn) };
    const p = [settings.maxLocks, settings.queryChars];
    const q = settings.showQueries;
    /** A full read, as the agent keeps it (its buckets and session rows). */
    const fullRead = async (): Promise<KnownPgLocks> => {
      const raw = (await admin.query<{ snapshot: unknown }>(PG_POLL_SQL, [...p, null, null, q, null, null])).rows[0]!
        .snapshot;
      const snap = parsePgSnapshot(raw, null, pgPollAsk(null), settings.maxLocks);
      return {
        signature: snap.signature,
        buckets: snap.buckets,
        sessions: new Map(snap.sessions.map((x) => [x.pid, x])),
      };
    };
    const params = (ask: PgPollAsk) => [
      ...p,
      ask.signature,
      ask.sessionHashes,
      q,
      ask.bucketSignatures,
      ask.sessionPids,
    ];
    // The statement before (BENCH_DB_BASELINE: a module exporting PG_POLL_SQL, e.g. `git show
    // main:agent/sources/postgres/pg-poll-sql.ts` saved to a file), timed in the same rounds. It takes $1-$3 (one
    // signature of every lock row), $1-$4 with the session hashes, $1-$5 as before the buckets, or $1-$6 as now (the
    // buckets: then it answers the agent's asks, and is timed in the very cases the current one is).
    const before = BASELINE ? ((await import(BASELINE)) as { PG_POLL_SQL: string }).PG_POLL_SQL : null;
    const arity =
      before === null ? 0 : before.includes("$6") ? 6 : before.includes("$5") ? 5 : before.includes("$4") ? 4 : 3;
    const bArgs = (sig: string | null, hashes: number[] | null) => [...p, sig, hashes, q].slice(0, arity);
    const baselineRead = async () => {
      const snap = (
        await admin.query<{ snapshot: { signature: string; sessions: Array<{ h?: number }> } }>(
          before!,
          bArgs(null, null),
        )
      ).rows[0]!.snapshot;
      return { signature: snap.signature, hashes: snap.sessions.map((x) => x.h!) };
    };
    // What the agent knew before one lock changed, and after: a holder takes one more key (one bucket changes, and
    // that holder's session row).
    const known0 = await fullRead();
    const b0 = before === null || arity === 6 ? null : await baselineRead();
    const changer = holders[0]!;
    await changer.query("SELECT pg_advisory_lock($1::bigint)", [LOCKS + 1_000_000]);
    const known1 = await fullRead();
    const b1 = before === null || arity === 6 ? null : await baselineRead();
    const hashes1 = pgPollAsk(known1).sessionHashes;
    // The cases: everything sent (the first poll, and after a failed one); every bucket sent but the sessions known
    // (what a poll after a lock change cost before the buckets); one lock changed since the last poll, as the agent
    // asks (the changed bucket comes, plus the bucket and the slice of sessions it asks for again in turn); unchanged,
    // as the agent asks (only the bucket and sessions asked for again); unchanged without asking anything again.
    const current = (params: unknown[]): StatementCase => ({ sql: PG_POLL_SQL, params, on: asAgent, prepared: true });
    const cases: Record<string, StatementCase> = {
      full: current([...p, null, null, q, null, null]),
      allBuckets: current([...p, null, hashes1, q, null, pgPollAsk(known1).sessionPids]),
      oneChanged: current(params(pgPollAsk(known0, 1))),
      unchanged: current(params(pgPollAsk(known1, 2))),
      unchangedNoRefresh: current(params(pgPollAsk(known1))),
    };
    // The statement before, as the agent ran it before: a plain statement on a connection with default settings.
    const baselineCase = (params: unknown[]): StatementCase => ({ sql: before!, params, on: plain });
    if (before !== null && arity === 6) {
      for (const n of Object.keys(cases)) {
        cases[`baseline${n[0]!.toUpperCase()}${n.slice(1)}`] = baselineCase(cases[n]!.params.slice(0, 6));
      }
    } else if (before !== null && b0 !== null && b1 !== null) {
      const baseline = baselineCase;
      cases.baselineFull = baseline(bArgs(null, null));
      if (arity > 3) cases.baselineRowsChanged = baseline(bArgs(null, b1.hashes));
      cases.baselineOneChanged = baseline(bArgs(b0.signature, b0.hashes));
      cases.baselineUnchanged = baseline(bArgs(b1.signature, b1.hashes));
    }
    const timed = await timeCases(cases);
    // What each case sends: bytes, buckets and lock rows.
    const sentBy = async (c: StatementCase) => {
      const raw = (
        await admin.query<{ snapshot: { buckets?: unknown[]; locks: Array<{ objid: unknown[] }> | null } }>(
          c.sql,
          c.params,
        )
      ).rows[0]!.snapshot;
      return {
        bytes: JSON.stringify(raw).length,
        buckets: raw.buckets?.length ?? null,
        lockRows: (raw.locks ?? []).reduce((n, g) => n + g.objid.length, 0),
      };
    };
    const sent: Record<string, Awaited<ReturnType<typeof sentBy>>> = {};
    for (const [n, c] of Object.entries(cases)) sent[n] = await sentBy(c);
    const baseline =
      before === null
        ? null
        : {
            from: BASELINE,
            full: timed.baselineFull,
            rowsChanged: timed.baselineRowsChanged ?? null,
            allBuckets: timed.baselineAllBuckets ?? null,
            oneChanged: timed.baselineOneChanged,
            unchanged: timed.baselineUnchanged,
            unchangedNoRefresh: timed.baselineUnchangedNoRefresh ?? null,
          };

    // The whole poll as the agent runs it: round trip, JSON parse, model and tracker; with the lock table unchanged,
    // and with one lock taken or released by a holder before each poll.
    port = new NodePgPort({ url: serverUrl, statementTimeoutMs: 2000, connectTimeoutMs: 2000 });
    const source = new PostgresSource(port, {
      sourceId: "postgresql://bench",
      agentId: "bench",
      newId: randomUUID,
      log,
      settings,
    });
    await source.poll();
    const timePolls = async (between: (i: number) => Promise<unknown>) => {
      const polls: number[] = [];
      for (let i = 0; i < REPEAT; i++) {
        await between(i);
        const t = performance.now();
        await source.poll();
        polls.push(performance.now() - t);
      }
      polls.sort((x, y) => x - y);
      return { p50: quantile(polls, 0.5), p95: quantile(polls, 0.95), max: polls.at(-1) };
    };
    const agentPollMs = await timePolls(async () => undefined);
    const agentPollOneChangedMs = await timePolls((i) =>
      changer.query(`SELECT pg_advisory_${i % 2 === 0 ? "unlock" : "lock"}($1::bigint)`, [LOCKS + 1_000_000]),
    );
    const locksSeen = source.locks().filter((l) => l.resource.startsWith(`${name}:`)).length;
    const [full, allBuckets, oneChanged, unchanged] = [
      timed.full!,
      timed.allBuckets!,
      timed.oneChanged!,
      timed.unchanged!,
    ];
    const met = (t: typeof full) => t.backendCpuPerPollMs !== null && t.backendCpuPerPollMs <= TARGET_MS;
    return {
      where,
      server: f.version.split(",")[0],
      maxConnections: Number(f.max),
      sessions: nSessions,
      backends: Number(c0.backends),
      advisoryLocksHeld: Number(c0.n),
      waiters: Number(c0.w),
      locksSeenByAgent: locksSeen,
      repeat: REPEAT,
      buckets: PG_LOCK_BUCKETS,
      full,
      allBuckets,
      oneChanged,
      unchanged,
      unchangedNoRefresh: timed.unchangedNoRefresh,
      baseline,
      agentPollMs,
      agentPollOneChangedMs,
      sent,
      targetMs: TARGET_MS,
      met: {
        full: met(full),
        allBuckets: met(allBuckets),
        oneChanged: met(oneChanged),
        unchanged: met(unchanged),
      },
      loadAverage1m: load.report(),
    };
  } finally {
    await port?.close().catch(() => undefined);
    await agentConn?.end().catch(() => undefined);
    // FORCE first: it ends the sessions, waiters included (a client's end() would wait for a blocked lock call).
    if (created) {
      await admin
        .query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        .catch((e: unknown) => log(`drop: ${String(e)}`));
    }
    await Promise.all(sessions.map((c) => c.end().catch(() => undefined)));
    await admin.end();
  }
}

async function main(): Promise<void> {
  const results = [];
  for (const where of SERVERS) {
    if (where === "private") {
      const server = await startPrivatePostgres({ maxConnections: PRIVATE_MAX_CONNECTIONS });
      log(`private: PostgreSQL cluster on 127.0.0.1:${server.port}`);
      try {
        results.push(await benchOn(server.url, "private"));
      } finally {
        // Stopped and its directory deleted whatever happened.
        await server.destroy();
        log("private: cluster stopped and deleted");
      }
    } else if (where === "shared") {
      results.push(await benchOn(SHARED_URL, "shared"));
    } else {
      throw new Error(`BENCH_DB_SERVERS: unknown server "${where}" (private or shared)`);
    }
  }
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench db-locks: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
