import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { freePort, waitFor } from "./ports";

/** The machine's shared PostgreSQL 15 (trust auth for root). Tests create their own database on it and drop it. */
export const SHARED_POSTGRES = process.env.TEST_POSTGRES_URL ?? "postgresql://root@127.0.0.1:5432/postgres";

export interface TestDatabase {
  name: string;
  url: string;
  /** Drops the database (terminating connections left open). */
  drop(): Promise<void>;
}

function withDatabase(serverUrl: string, name: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/** CREATE DATABASE lockscope_test_<random> on `serverUrl` (default: the shared server). */
export async function createTestDatabase(serverUrl = SHARED_POSTGRES): Promise<TestDatabase> {
  const name = `lockscope_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(serverUrl, name),
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

const BIN = "/usr/lib/postgresql/15/bin";

export interface PrivatePostgres {
  port: number;
  /** postgresql://postgres@127.0.0.1:<port>/postgres */
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops and removes the data directory. */
  destroy(): Promise<void>;
}

export interface PrivatePostgresOptions {
  /** max_connections (default 60). */
  maxConnections?: number;
  /** Further server settings, each passed as `-c name=value`. */
  settings?: Record<string, string | number>;
}

/**
 * A private PostgreSQL 15 server (initdb + postgres) in a temp directory on a free loopback port, for tests that
 * restart the server (the machine's shared one must never be restarted) and for benches that need more sessions than
 * the shared one allows. initdb refuses to run as root, so as root the server runs as the `postgres` system user.
 * If it fails to start, its directory is removed before the error is thrown.
 */
export async function startPrivatePostgres(opts: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-pg-"));
  try {
    return await startIn(dir, opts);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

async function startIn(dir: string, opts: PrivatePostgresOptions): Promise<PrivatePostgres> {
  chmodSync(dir, 0o777);
  const data = path.join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) =>
    (asRoot ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args]) as [string, string[]];
  const [c, a] = run(`${BIN}/initdb`, ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const init = spawnSync(c, a, { encoding: "utf8" });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const log = path.join(dir, "server.log");
  const pgCtl = (args: string[]) => {
    const [cmd, argv] = run(`${BIN}/pg_ctl`, ["-D", data, ...args]);
    const r = spawnSync(cmd, argv, { encoding: "utf8", timeout: 60_000 });
    if (r.status !== 0) throw new Error(`pg_ctl ${args[0]} failed: ${r.stderr || r.stdout}`);
  };
  const extra = Object.entries(opts.settings ?? {})
    .map(([k, v]) => ` -c ${k}=${v}`)
    .join("");
  const options = `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off -c max_connections=${opts.maxConnections ?? 60}${extra}`;
  const start = async () => {
    try {
      pgCtl(["start", "-w", "-t", "30", "-l", log, "-o", options]);
      await waitFor(
        `private postgres on ${port}`,
        async () => {
          const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
          try {
            await probe.connect();
            await probe.query("SELECT 1");
            return true;
          } finally {
            await probe.end().catch(() => undefined);
          }
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
    } catch (err) {
      // A server that started but never answered (or a pg_ctl that gave up waiting) must not outlive the error.
      try {
        pgCtl(["stop", "-w", "-m", "immediate"]);
      } catch {
        // not running
      }
      throw err;
    }
  };
  let running = false;
  // "fast" shutdown cuts every connection, as a real restart or failover does.
  const stop = async () => {
    if (!running) return;
    pgCtl(["stop", "-w", "-m", "fast"]);
    running = false;
  };
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const startTracked = async () => {
    await start();
    running = true;
  };
  await startTracked();
  return {
    port,
    url,
    start: startTracked,
    stop,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
