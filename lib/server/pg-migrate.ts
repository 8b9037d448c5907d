/**
 * Applies the committed PostgreSQL migrations (prisma/postgres/migrations/<name>/migration.sql) at start.
 * Prisma 6.19's JS engine cannot `migrate deploy` on PostgreSQL (../shared/reference/stack.md), so the dashboard
 * does it itself through `pg`: a table of applied migrations, so an upgrade applies only what is new, and a session
 * advisory lock around it, so two dashboards starting at once never apply one twice.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import pg from "pg";

/** Key of the advisory lock held while migrating: the ASCII bytes of "lockscop", recognisable in pg_locks. */
export const MIGRATION_LOCK_KEY = "0x6c6f636b73636f70";
const MIGRATION_LOCK_BIGINT = BigInt(MIGRATION_LOCK_KEY).toString();
export const MIGRATIONS_TABLE = "_lockscope_migrations";

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export interface AppliedMigration {
  name: string;
  checksum: string;
}

export interface MigrationPlan {
  /** Migrations not yet applied, in name order. */
  pending: MigrationFile[];
  /** Applied migrations whose file has changed since: refused, since the database no longer matches the files. */
  changed: string[];
  /** Applied migrations this build does not know (a newer dashboard applied them): reported, not undone. */
  unknown: string[];
}

/** Decides what to apply: pure, so the rules are tested without a server. */
export function planMigrations(files: readonly MigrationFile[], applied: readonly AppliedMigration[]): MigrationPlan {
  const done = new Map(applied.map((a) => [a.name, a.checksum]));
  const known = new Set(files.map((f) => f.name));
  const sorted = [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    pending: sorted.filter((f) => !done.has(f.name)),
    changed: sorted.filter((f) => done.has(f.name) && done.get(f.name) !== f.checksum).map((f) => f.name),
    unknown: applied.filter((a) => !known.has(a.name)).map((a) => a.name),
  };
}

export function checksum(sql: string): string {
  return createHash("sha256").update(sql.replace(/\r\n/g, "\n")).digest("hex");
}

/** Reads `<dir>/<name>/migration.sql` for every sub-directory, in name order. */
export function readMigrationFiles(dir: string): MigrationFile[] {
  return readdirSync(dir)
    .filter((name) => statSync(path.join(dir, name)).isDirectory())
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: checksum(sql) };
    });
}

export interface MigrationResult {
  applied: string[];
  unknown: string[];
}

/** Connects to `url`, takes the migration lock, applies what is pending (each in its own transaction), releases. */
export async function migratePostgres(url: string, dir: string): Promise<MigrationResult> {
  const files = readMigrationFiles(dir);
  const client = new pg.Client({ connectionString: url, application_name: "lockscope-migrate" });
  await client.connect();
  try {
    // Session-level, so it spans the per-migration transactions; a second dashboard waits here, then finds
    // everything applied. The lock goes with the connection if this process dies mid-way.
    await client.query("SELECT pg_advisory_lock($1::bigint)", [MIGRATION_LOCK_BIGINT]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS "${MIGRATIONS_TABLE}" (
         "name" TEXT PRIMARY KEY,
         "checksum" TEXT NOT NULL,
         "appliedAt" TIMESTAMPTZ NOT NULL DEFAULT now()
       )`,
    );
    const { rows } = await client.query<AppliedMigration>(`SELECT "name", "checksum" FROM "${MIGRATIONS_TABLE}"`);
    const plan = planMigrations(files, rows);
    if (plan.changed.length > 0) {
      throw new Error(
        `migration file(s) changed after they were applied: ${plan.changed.join(", ")} (add a new migration instead)`,
      );
    }
    for (const m of plan.pending) {
      // DDL is transactional in PostgreSQL: a migration that fails half-way leaves nothing behind.
      await client.query("BEGIN");
      try {
        await client.query(m.sql);
        await client.query(`INSERT INTO "${MIGRATIONS_TABLE}" ("name", "checksum") VALUES ($1, $2)`, [
          m.name,
          m.checksum,
        ]);
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw new Error(`migration ${m.name} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return { applied: plan.pending.map((m) => m.name), unknown: plan.unknown };
  } finally {
    await client.query("SELECT pg_advisory_unlock($1::bigint)", [MIGRATION_LOCK_BIGINT]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}
