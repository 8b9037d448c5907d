import path from "node:path";
import { defineConfig } from "prisma/config";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { databaseFileUrl } from "./lib/server/database-url";

// Prisma 7's CLI downloads a native schema engine; 6.19's JS engine works offline through the driver adapter.
export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: path.join("prisma", "schema.prisma"),
  migrations: { path: path.join("prisma", "migrations") },
  adapter: async () => new PrismaBetterSQLite3({ url: databaseFileUrl(process.env.DATABASE_URL) }),
});
