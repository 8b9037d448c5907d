import { describe, expect, it } from "vitest";
import { databaseFilePath, describeDatabaseFileProblem, type DatabaseFileProbe } from "../../lib/server/database-file";
import { migrationFailureSummary } from "../../lib/server/migrate";

const ok: DatabaseFileProbe = {
  folder: "/srv/lockscope/data",
  file: "/srv/lockscope/data/lockscope.db",
  existingAncestor: "/srv/lockscope/data",
  ancestorIsDirectory: true,
  ancestorWritable: true,
  fileExists: true,
  fileIsDirectory: false,
  fileWritable: true,
};

describe("the SQLite database file", () => {
  it("resolves a file: URL against the working directory; in-memory has no file", () => {
    expect(databaseFilePath("file:./data/lockscope.db", "/srv/app")).toBe("/srv/app/data/lockscope.db");
    expect(databaseFilePath("file:/var/lib/ls.db?connection_limit=1", "/srv/app")).toBe("/var/lib/ls.db");
    expect(databaseFilePath("file::memory:", "/srv/app")).toBeNull();
    expect(databaseFilePath("postgresql://127.0.0.1/x", "/srv/app")).toBeNull();
  });

  it("says what is wrong with its folder or file", () => {
    expect(describeDatabaseFileProblem(ok)).toBeNull();
    expect(describeDatabaseFileProblem({ ...ok, existingAncestor: "/srv/lockscope", fileExists: false })).toBe(
      "the folder /srv/lockscope/data does not exist",
    );
    expect(
      describeDatabaseFileProblem({ ...ok, existingAncestor: "/srv", ancestorWritable: false, fileExists: false }),
    ).toBe("the folder /srv/lockscope/data does not exist and /srv is not writable");
    expect(describeDatabaseFileProblem({ ...ok, existingAncestor: "/srv/lockscope", ancestorIsDirectory: false })).toBe(
      "/srv/lockscope is a file, not a folder",
    );
    expect(describeDatabaseFileProblem({ ...ok, fileIsDirectory: true })).toBe(
      "/srv/lockscope/data/lockscope.db is a folder, not a database file",
    );
    expect(describeDatabaseFileProblem({ ...ok, fileWritable: false })).toBe(
      "the database file /srv/lockscope/data/lockscope.db is not writable",
    );
    expect(describeDatabaseFileProblem({ ...ok, fileExists: false, ancestorWritable: false })).toBe(
      "the folder /srv/lockscope/data is not writable",
    );
  });

  it("turns Prisma's output into the lines that say what failed", () => {
    const raw = [
      "Loaded Prisma config from prisma.config.ts.",
      "",
      "Prisma config detected, skipping environment variable loading.",
      "Prisma schema loaded from prisma/schema.prisma",
      "Error: External error id#0",
    ].join("\n");
    expect(migrationFailureSummary(raw)).toBe(
      "Error: External error id#0 (SQLite could not open or write the database; check that its folder exists and is writable)",
    );
    expect(migrationFailureSummary("Error: P3009 migrate found failed migrations")).toBe(
      "Error: P3009 migrate found failed migrations",
    );
    expect(migrationFailureSummary("")).toBe("prisma migrate deploy failed without output");
  });
});
