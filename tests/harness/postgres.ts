import { randomBytes } from "node:crypto";
import pg from "pg";

/** The machine's PostgreSQL 15 (trust auth, user root): tests make their own database and drop it. */
export const PG_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? "postgresql://root@127.0.0.1:5432/postgres";

export interface PgTestDatabase {
  name: string;
  url: string;
  /** A new session for the test (application_name set so a failure message says who it was). */
  session(application?: string): Promise<pg.Client>;
  /** Closes the sessions it opened and drops the database (ending any session left in it). */
  drop(): Promise<void>;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export async function createPgDatabase(prefix = "lockscope_test", exactName?: string): Promise<PgTestDatabase> {
  const name = exactName ?? `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
  } finally {
    await admin.end();
  }
  const base = new URL(PG_ADMIN_URL);
  base.pathname = `/${encodeURIComponent(name)}`;
  const url = base.toString();
  const clients: pg.Client[] = [];
  return {
    name,
    url,
    async session(application = "lockscope-test") {
      const c = new pg.Client({ connectionString: url, application_name: application });
      // A session the test ends on purpose (pg_terminate_backend) reports an error event: expected, not a crash.
      c.on("error", () => undefined);
      await c.connect();
      clients.push(c);
      return c;
    },
    async drop() {
      // FORCE first: it ends the test's sessions, a blocked waiter's too (its end() would wait for the lock call).
      const a = new pg.Client({ connectionString: PG_ADMIN_URL });
      await a.connect();
      try {
        await a.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      } finally {
        await a.end();
      }
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    },
  };
}

/** The backend pid of a test session. */
export async function backendPid(c: pg.Client): Promise<number> {
  const r = await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  return r.rows[0]!.pid;
}
