import { dbLockBackend } from "../db-lock-source";
import { Mysql2Port } from "./mysql-client";
import { loadMysqlConfig } from "./mysql-config";
import { MysqlSource } from "./mysql-source";

/** MYSQL_URLS: one source per MySQL or MariaDB server (user-level locks are server-wide). */
export const mysqlBackend = dbLockBackend({
  name: "mysql",
  load: loadMysqlConfig,
  port: (opts) => new Mysql2Port(opts),
  source: (port, opts) => new MysqlSource(port, opts),
});
