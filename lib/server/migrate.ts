import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
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
 */
export function applyMigrations(databaseUrl: string, root: string): void {
  const require = createRequire(import.meta.url);
  const cli = require.resolve("prisma/build/index.js");
  try {
    execFileSync(process.execPath, [cli, "migrate", "deploy"], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: databaseUrl, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 120_000,
    });
  } catch (err) {
    const e = err as { stderr?: Buffer; stdout?: Buffer; message: string };
    const why = (e.stderr?.toString() || e.stdout?.toString() || e.message).trim().split("\n").slice(-3).join(" ");
    throw new Error(`database migration failed for ${databaseUrl}: ${why}`);
  }
}

export const projectRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
