/**
 * Database locks for the quick start: real sessions taking PostgreSQL advisory locks and MariaDB/MySQL GET_LOCK
 * locks, in a throwaway database that is dropped on exit. It shows the ordinary case and the hazards lockscope
 * flags: a blocking chain of three, a holder idle in transaction, a session-level lock left on an idle session.
 *
 *   npx tsx scripts/demo-db-locks.ts --detect   prints `export POSTGRES_URLS=…` / `export MYSQL_URLS=…` for the
 *                                              local servers that answer (nothing for those that do not)
 *   npx tsx scripts/demo-db-locks.ts           runs the workload against POSTGRES_URLS / MYSQL_URLS (first of each)
 */
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import pg from "pg";

const LOCAL_PG = "postgresql://root@127.0.0.1:5432/postgres";
const LOCAL_MYSQL = "mysql://root@127.0.0.1:3306";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => process.stdout.write(`demo-db-locks: ${line}\n`);

async function pgAnswers(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await c.connect();
    await c.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function mysqlAnswers(url: string): Promise<boolean> {
  try {
    const c = await mysql.createConnection({ uri: url, connectTimeout: 1000 });
    await c.end();
    return true;
  } catch {
    return false;
  }
}

async function detect(): Promise<void> {
  if (await pgAnswers(LOCAL_PG)) process.stdout.write(`export POSTGRES_URLS=${LOCAL_PG}\n`);
  if (await mysqlAnswers(LOCAL_MYSQL)) process.stdout.write(`export MYSQL_URLS=${LOCAL_MYSQL}\n`);
}

const stops: Array<() => Promise<void>> = [];
let stopping = false;

async function postgresWorkload(adminUrl: string): Promise<void> {
  const name = `lockscope_demo_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const sessions: pg.Client[] = [];
  const session = async (application: string) => {
    const c = new pg.Client({ connectionString: url.toString(), application_name: application });
    c.on("error", () => undefined); // an operator may end a demo session from the dashboard: that is the point
    await c.connect();
    sessions.push(c);
    return c;
  };
  stops.push(async () => {
    // FORCE ends the demo's own sessions (some are blocked in a lock call), so nothing waits on them.
    const a = new pg.Client({ connectionString: adminUrl });
    await a.connect();
    await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await a.end();
  });
  log(`PostgreSQL: advisory locks in database ${name}`);

  // A migration tool that took its lock and then went quiet: a session-level lock on an idle session.
  const migrator = await session("schema-migrator");
  await migrator.query("SELECT pg_advisory_lock(42)");

  // A report job that holds a transaction-level lock and sits idle in its transaction for a while.
  void (async () => {
    const report = await session("nightly-report");
    while (!stopping) {
      await report.query("BEGIN");
      await report.query("SELECT pg_advisory_xact_lock(7, 8)");
      await sleep(40_000);
      await report.query("COMMIT").catch(() => undefined);
      await sleep(10_000);
    }
  })().catch(() => undefined);

  // Three schedulers: A holds 1001; B holds 1002 and waits for 1001; C waits for 1002. A lets go now and then.
  void (async () => {
    const [a, b, c] = [await session("scheduler-a"), await session("scheduler-b"), await session("scheduler-c")];
    while (!stopping) {
      await a.query("SELECT pg_advisory_lock(1001)");
      await b.query("SELECT pg_advisory_lock(1002)");
      const bWaits = b.query("SELECT pg_advisory_lock(1001)");
      const cWaits = c.query("SELECT pg_advisory_lock(1002)");
      // The drop on exit ends these sessions mid-wait: handled now, or the rejection crashes the script with a trace.
      bWaits.catch(() => undefined);
      cWaits.catch(() => undefined);
      await sleep(45_000);
      await a.query("SELECT pg_advisory_unlock(1001)");
      await bWaits;
      await b.query("SELECT pg_advisory_unlock_all()");
      await cWaits;
      await sleep(5000);
      await c.query("SELECT pg_advisory_unlock_all()");
      await sleep(5000);
    }
  })().catch(() => undefined);
}

async function mysqlWorkload(url: string): Promise<void> {
  const probe = await mysql.createConnection(url);
  try {
    await probe.query("SELECT 1 FROM information_schema.METADATA_LOCK_INFO LIMIT 1");
  } catch {
    log(
      "MariaDB: information_schema.METADATA_LOCK_INFO is missing, so the agent cannot list GET_LOCK locks; an administrator can run INSTALL SONAME 'metadata_lock_info' (once). The MySQL demo still runs.",
    );
  } finally {
    await probe.end();
  }
  const prefix = `lockscope-demo-${randomBytes(3).toString("hex")}`;
  const conns: mysql.Connection[] = [];
  const connect = async () => {
    const c = await mysql.createConnection(url);
    c.on("error", () => undefined);
    conns.push(c);
    return c;
  };
  // destroy, not end: end would wait for a GET_LOCK that is still blocked.
  stops.push(async () => conns.forEach((c) => c.destroy()));
  log(`MySQL/MariaDB: GET_LOCK locks named ${prefix}:*`);
  const holder = await connect();
  const waiter = await connect();
  void (async () => {
    while (!stopping) {
      await holder.query("SELECT GET_LOCK(?, 0)", [`${prefix}:invoice-run`]);
      const waits = waiter.query("SELECT GET_LOCK(?, 60)", [`${prefix}:invoice-run`]);
      waits.catch(() => undefined); // destroyed mid-wait on exit
      await sleep(30_000);
      await holder.query("SELECT RELEASE_LOCK(?)", [`${prefix}:invoice-run`]);
      await waits;
      await sleep(5000);
      await waiter.query("SELECT RELEASE_LOCK(?)", [`${prefix}:invoice-run`]);
      await sleep(5000);
    }
  })().catch(() => undefined);
}

async function main(): Promise<void> {
  if (process.argv.includes("--detect")) return detect();
  const pgUrl = process.env.POSTGRES_URLS?.split(",")[0]?.trim();
  const myUrl = process.env.MYSQL_URLS?.split(",")[0]?.trim();
  if (pgUrl) await postgresWorkload(pgUrl).catch((e: unknown) => log(`PostgreSQL demo not started: ${String(e)}`));
  if (myUrl) await mysqlWorkload(myUrl).catch((e: unknown) => log(`MySQL demo not started: ${String(e)}`));
  const stop = async () => {
    stopping = true;
    for (const s of stops) await s().catch(() => undefined);
    process.exit(0);
  };
  process.on("SIGINT", () => void stop());
  process.on("SIGTERM", () => void stop());
}

void main();
