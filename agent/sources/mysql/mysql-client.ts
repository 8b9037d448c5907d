import mysql from "mysql2/promise";
import type { MysqlFlavour, MysqlLockTable } from "./mysql-locks-model";
import type { MysqlPort } from "./mysql-port";
import { MARIADB_POLL_SQL, MYSQL8_POLL_SQL } from "./mysql-poll-sql";

/**
 * mysql2 behind MysqlPort: one connection per server (a pool of one, which replaces a broken connection). Each
 * connection is made read-only with a statement time limit before its first use, in the flavour's own words.
 */
export class Mysql2Port implements MysqlPort {
  private readonly pool: mysql.Pool;
  private kind: MysqlFlavour | null = null;

  constructor(opts: { url: string; statementTimeoutMs: number; connectTimeoutMs: number }) {
    this.pool = mysql.createPool({
      uri: opts.url,
      connectionLimit: 1,
      connectTimeout: opts.connectTimeoutMs,
      // Names and statement text are read as bytes where it matters (HEX); the rest as text.
      supportBigNumbers: true,
      bigNumberStrings: false,
    });
    this.statementTimeoutMs = opts.statementTimeoutMs;
  }

  private readonly statementTimeoutMs: number;
  /** Connections already made read-only and time-limited (the pool replaces broken ones with new ones). */
  private readonly prepared = new WeakSet<object>();

  /** Runs fn on the pool's connection, preparing it first if it is new. */
  private async with<T>(fn: (c: mysql.PoolConnection) => Promise<T>): Promise<T> {
    const c = await this.pool.getConnection();
    try {
      if (!this.prepared.has(c.connection)) {
        await c.query("SET SESSION TRANSACTION READ ONLY");
        // MariaDB's limit is max_statement_time (seconds), MySQL's max_execution_time (ms, SELECT only).
        await c
          .query(`SET SESSION max_statement_time = ${Math.max(0.05, this.statementTimeoutMs / 1000)}`)
          .catch(() => c.query(`SET SESSION max_execution_time = ${Math.round(this.statementTimeoutMs)}`));
        this.prepared.add(c.connection);
      }
      return await fn(c);
    } finally {
      c.release();
    }
  }

  async flavour(): Promise<MysqlFlavour> {
    if (this.kind) return this.kind;
    const [rows] = await this.with((c) => c.query<mysql.RowDataPacket[]>("SELECT VERSION() AS v"));
    this.kind = /mariadb/i.test(String(rows[0]?.v ?? "")) ? "mariadb" : "mysql";
    return this.kind;
  }

  async lockTable(flavour: MysqlFlavour): Promise<MysqlLockTable> {
    if (flavour === "mysql") return "performance_schema";
    const [rows] = await this.with((c) =>
      c.query<mysql.RowDataPacket[]>(
        "SELECT (SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'METADATA_LOCK_INFO' AND PLUGIN_STATUS = 'ACTIVE') AS plugin, @@performance_schema AS ps",
      ),
    );
    if (Number(rows[0]?.plugin) > 0 || Number(rows[0]?.ps) !== 1) return "metadata_lock_info";
    // performance_schema is on; it lists user locks only with the MDL instrument enabled (and may not be readable).
    const mdl = await this.with((c) =>
      c.query<mysql.RowDataPacket[]>(
        "SELECT ENABLED FROM performance_schema.setup_instruments WHERE NAME = 'wait/lock/metadata/sql/mdl'",
      ),
    ).catch(() => null);
    return mdl?.[0][0]?.ENABLED === "YES" ? "performance_schema" : "metadata_lock_info";
  }

  async userLocks(table: MysqlLockTable, queryChars: number, maxRows: number): Promise<unknown[]> {
    const sql = table === "metadata_lock_info" ? MARIADB_POLL_SQL : MYSQL8_POLL_SQL;
    const [rows] = await this.with((c) => c.query<mysql.RowDataPacket[]>(sql, [queryChars, maxRows]));
    return rows.map((r) => ({ ...r }));
  }

  async holderCheck(table: MysqlLockTable, name: Buffer, id: number) {
    const sql =
      table === "metadata_lock_info"
        ? "SELECT IS_USED_LOCK(?) AS usedBy, (SELECT USER FROM information_schema.PROCESSLIST WHERE ID = ?) AS user, (SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = ?) AS host"
        : "SELECT IS_USED_LOCK(?) AS usedBy, (SELECT PROCESSLIST_USER FROM performance_schema.threads WHERE PROCESSLIST_ID = ?) AS user, (SELECT PROCESSLIST_HOST FROM performance_schema.threads WHERE PROCESSLIST_ID = ?) AS host";
    const [rows] = await this.with((c) => c.query<mysql.RowDataPacket[]>(sql, [name, id, id]));
    const r: mysql.RowDataPacket = rows[0] ?? ({} as mysql.RowDataPacket);
    return {
      usedBy: r.usedBy === null || r.usedBy === undefined ? null : Number(r.usedBy),
      user: (r.user as string | null) ?? null,
      host: (r.host as string | null) ?? null,
    };
  }

  async kill(id: number): Promise<void> {
    if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`not a connection id: ${id}`);
    await this.with((c) => c.query(`KILL CONNECTION ${id}`));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
