import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { pendingSqliteMigrations } from "../../lib/server/migrate";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function fixture(migrations: string[]): { dir: string; file: string; migrationsDir: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-migrations-"));
  dirs.push(dir);
  const migrationsDir = path.join(dir, "migrations");
  for (const m of migrations) mkdirSync(path.join(migrationsDir, m), { recursive: true });
  return { dir, file: path.join(dir, "lockscope.db"), migrationsDir };
}

describe("pendingSqliteMigrations", () => {
  it("lists every committed migration for a new file, and only the unrecorded ones after", () => {
    const f = fixture(["20261129000000_init", "20261201090000_sessions"]);
    expect(pendingSqliteMigrations(f.file, f.migrationsDir)).toEqual([
      "20261129000000_init",
      "20261201090000_sessions",
    ]);
    const db = new Database(f.file);
    // Kept open in WAL mode, as a running dashboard keeps it: the check must still read it.
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE _prisma_migrations (migration_name TEXT, finished_at DATETIME, rolled_back_at DATETIME)");
    db.prepare("INSERT INTO _prisma_migrations VALUES (?, CURRENT_TIMESTAMP, NULL)").run("20261129000000_init");
    expect(pendingSqliteMigrations(f.file, f.migrationsDir)).toEqual(["20261201090000_sessions"]);
    db.prepare("INSERT INTO _prisma_migrations VALUES (?, NULL, NULL)").run("20261201090000_sessions");
    expect(pendingSqliteMigrations(f.file, f.migrationsDir)).toEqual(["20261201090000_sessions"]); // not finished
    db.prepare("UPDATE _prisma_migrations SET finished_at = CURRENT_TIMESTAMP").run();
    expect(pendingSqliteMigrations(f.file, f.migrationsDir)).toEqual([]);
    db.close();
  });

  it("a file that is not a lockscope database leaves the decision (and the error) to prisma migrate deploy", () => {
    const f = fixture(["20261129000000_init"]);
    new Database(f.file).close(); // empty: no _prisma_migrations table
    expect(pendingSqliteMigrations(f.file, f.migrationsDir)).toEqual(["20261129000000_init"]);
  });
});
