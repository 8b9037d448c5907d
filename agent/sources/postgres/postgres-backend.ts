import { dbLockBackend } from "../db-lock-source";
import { NodePgPort } from "./pg-client";
import { loadPostgresConfig } from "./pg-config";
import { PostgresSource } from "./pg-source";

/** POSTGRES_URLS: one source per server; one connection sees the advisory locks of all its databases. */
export const postgresBackend = dbLockBackend({
  name: "postgres",
  load: loadPostgresConfig,
  port: (opts) => new NodePgPort(opts),
  source: (port, opts) => new PostgresSource(port, opts),
});
