import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { projectRoot } from "../../lib/server/migrate";
import { MIGRATIONS_TABLE, migratePostgres, readMigrationFiles } from "../../lib/server/pg-migrate";
import { createTestDatabase, type TestDatabase } from "../harness/postgres-server";

// The dashboard's own PostgreSQL migrator against the machine's PostgreSQL 15, one fresh database per test.
const committed = path.join(projectRoot, "prisma", "postgres", "migrations");
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function freshDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  cleanups.push(() => db.drop());
  return db;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql)).rows;
  } finally {
    await c.end();
  }
}

function copyOfMigrations(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-migrations-"));
  cpSync(committed, dir, { recursive: true });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("PostgreSQL migrations applied by the dashboard", () => {
  it("two dashboards starting at once on a fresh database apply each migration exactly once", async () => {
    const db = await freshDatabase();
    const names = readMigrationFiles(committed).map((m) => m.name);
    // Without the advisory lock both would run CREATE TABLE "Event" and one would fail with "already exists".
    const results = await Promise.all([
      migratePostgres(db.url, committed),
      migratePostgres(db.url, committed),
      migratePostgres(db.url, committed),
    ]);
    expect(results.flatMap((r) => r.applied).sort()).toEqual(names);
    const rows = await query<{ name: string }>(db.url, `SELECT "name" FROM "${MIGRATIONS_TABLE}" ORDER BY "name"`);
    expect(rows.map((r) => r.name)).toEqual(names);
    const tables = await query<{ tablename: string }>(
      db.url,
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
    );
    expect(tables.map((t) => t.tablename)).toEqual(expect.arrayContaining(["Event", "Alert", "ResourceHour"]));
    // The lock is released afterwards: nothing of ours is left in pg_locks.
    const held = await query(
      db.url,
      `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    expect(held).toEqual([]);
  });

  it("an upgrade applies only what is new, and a second start applies nothing", async () => {
    const db = await freshDatabase();
    const dir = copyOfMigrations();
    const first = await migratePostgres(db.url, dir);
    expect(first.applied.length).toBeGreaterThan(0);
    mkdirSync(path.join(dir, "29991231000000_extra"));
    writeFileSync(
      path.join(dir, "29991231000000_extra", "migration.sql"),
      `CREATE TABLE "Extra" ("id" TEXT PRIMARY KEY);\nINSERT INTO "Extra" VALUES ('once');\n`,
    );
    expect(await migratePostgres(db.url, dir)).toEqual({ applied: ["29991231000000_extra"], unknown: [] });
    expect(await migratePostgres(db.url, dir)).toEqual({ applied: [], unknown: [] });
    expect(await query(db.url, `SELECT "id" FROM "Extra"`)).toEqual([{ id: "once" }]);
    // An older build on the newer database: reported, nothing undone.
    expect(await migratePostgres(db.url, committed)).toEqual({ applied: [], unknown: ["29991231000000_extra"] });
  });

  it("refuses an applied migration whose file changed, and rolls back a failing one entirely", async () => {
    const db = await freshDatabase();
    const dir = copyOfMigrations();
    await migratePostgres(db.url, dir);
    const [init] = readMigrationFiles(dir);
    writeFileSync(path.join(dir, init!.name, "migration.sql"), `${init!.sql}\n-- edited\n`);
    await expect(migratePostgres(db.url, dir)).rejects.toThrow(/changed after they were applied: .*init/);

    const db2 = await freshDatabase();
    const dir2 = copyOfMigrations();
    mkdirSync(path.join(dir2, "29991231000000_broken"));
    writeFileSync(
      path.join(dir2, "29991231000000_broken", "migration.sql"),
      `CREATE TABLE "Half" ("id" TEXT);\nSELECT no_such_function();\n`,
    );
    await expect(migratePostgres(db2.url, dir2)).rejects.toThrow(/migration 29991231000000_broken failed/);
    expect(await query(db2.url, `SELECT to_regclass('"Half"') AS t`)).toEqual([{ t: null }]);
    const applied = await query<{ name: string }>(db2.url, `SELECT "name" FROM "${MIGRATIONS_TABLE}"`);
    expect(applied.map((r) => r.name)).not.toContain("29991231000000_broken");
  });
});
