import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { PrismaClient } from "../../lib/generated/prisma/client.ts";
import { sqlitePragmas } from "../../lib/server/store";

// A real SQLite file through the same adapter the dashboard uses: the second connection finds it in WAL mode already,
// as every dashboard start after the first does.
describe("the SQLite store's durability", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-sync-"));
  const url = `file:${path.join(dir, "store.db")}`;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const synchronousAfterOpen = async (): Promise<number> => {
    const prisma = new PrismaClient({ adapter: new PrismaBetterSQLite3({ url }) });
    try {
      await sqlitePragmas(prisma);
      const [row] = await prisma.$queryRawUnsafe<Array<{ synchronous: number | bigint }>>("PRAGMA synchronous");
      return Number(row!.synchronous);
    } finally {
      await prisma.$disconnect();
    }
  };

  it("commits with synchronous FULL on a fresh file and on a file already in WAL mode", async () => {
    expect(await synchronousAfterOpen()).toBe(2);
    expect(await synchronousAfterOpen()).toBe(2);
  });
});
