import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import Database from "better-sqlite3";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  databaseFilePath,
  describeDatabaseFileProblem,
  ensureDatabaseFolder,
  probeDatabaseFile,
} from "./database-file";
import { parseDatabaseUrl, redact } from "./database-url";
import { migratePostgres, type MigrationResult } from "./pg-migrate";

/**
 * Brings the history store's schema up to date before the server opens it: SQLite through `prisma migrate deploy`
 * (prisma/migrations), PostgreSQL through lib/server/pg-migrate.ts (prisma/postgres/migrations).
 */
export async function migrateDatabase(databaseUrl: string, root: string): Promise<MigrationResult | null> {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.provider === "sqlite") {
    applyMigrations(target.url, root);
    return null;
  }
  try {
    return await migratePostgres(target.url, path.join(root, "prisma", "postgres", "migrations"));
  } catch (err) {
    throw new Error(
      `database migration failed for ${redact(target.url)}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * SQLite: applies committed migrations (prisma migrate deploy) before the server opens the store, so an upgrade never
 * runs new code against an old schema. Prisma's JS engine does this offline (../shared/reference/stack.md).
 * The database's folder is created first: a fresh clone has no ./data, and Prisma's JS engine reports a missing
 * folder only as "External error id#0".
 */
export function applyMigrations(databaseUrl: string, root: string): void {
  const require = createRequire(import.meta.url);
  const cli = require.resolve("prisma/build/index.js");
  // Prisma runs in the project root; a relative file: URL means the dashboard's working directory, as for the store.
  const file = databaseFilePath(databaseUrl, process.cwd());
  if (file) ensureDatabaseFolder(file);
  // Nothing new to apply (a restart, a second dashboard on the same file): Prisma's engine is not started at all. It
  // cannot open a database in WAL mode while another process has it open, or with a -wal file a crash left behind.
  if (file && pendingSqliteMigrations(file, path.join(root, "prisma", "migrations")).length === 0) return;
  const url = file ? `file:${file}` : databaseUrl;
  try {
    execFileSync(process.execPath, [cli, "migrate", "deploy"], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: url, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 120_000,
    });
  } catch (err) {
    const e = err as { stderr?: Buffer; stdout?: Buffer; message: string };
    const output = (e.stderr?.toString() || e.stdout?.toString() || e.message).trim();
    const problem = file ? describeDatabaseFileProblem(probeDatabaseFile(file)) : null;
    if (problem) throw new Error(`database migration failed for ${databaseUrl}: ${problem}`);
    throw new Error(`database migration failed for ${databaseUrl}: ${migrationFailureSummary(output)}`);
  }
}

/** The lines of Prisma's output that say what failed, without its banner ("Prisma config detected, …"). */
export function migrationFailureSummary(output: string): string {
  const noise =
    /^(Loaded Prisma config|Prisma config detected|Prisma schema loaded|Datasource "|\d+ migrations? found)/;
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !noise.test(l));
  const text = lines.slice(-3).join(" ");
  if (/External error id#\d+/.test(text)) {
    return `${text} (SQLite could not open or write the database; check that its folder exists and is writable)`;
  }
  return text || "prisma migrate deploy failed without output";
}

/**
 * The checkout's root (where prisma.config.ts, prisma/ and .next/ are): found by walking up from this module, so
 * it is the same whether this runs from lib/server/ through tsx or from a bundle in dist/.
 */
function findProjectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "prisma.config.ts")) && existsSync(path.join(dir, "package.json"))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
    dir = up;
  }
}

export const projectRoot = findProjectRoot();

/**
 * Committed migrations (folders of prisma/migrations) not yet recorded as finished in the database's
 * _prisma_migrations table, read with better-sqlite3 (which shares WAL with the store). All of them when the file or
 * the table does not exist yet, or cannot be read: then `prisma migrate deploy` decides, and reports what is wrong.
 */
export function pendingSqliteMigrations(file: string, migrationsDir: string): string[] {
  const committed = readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  if (!existsSync(file)) return committed;
  let db: InstanceType<typeof Database> | null = null;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const rows = db
      .prepare("SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL")
      .all() as Array<{ migration_name: string }>;
    const done = new Set(rows.map((r) => r.migration_name));
    return committed.filter((m) => !done.has(m));
  } catch {
    return committed;
  } finally {
    db?.close();
  }
}
