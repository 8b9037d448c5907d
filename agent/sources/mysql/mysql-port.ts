import type { MysqlFlavour, MysqlLockTable } from "./mysql-locks-model";

/** The only statements the MySQL/MariaDB source runs. */
export interface MysqlPort {
  /** SELECT VERSION(): MariaDB says so in it. */
  flavour(): Promise<MysqlFlavour>;
  /**
   * Which table lists user-level locks, by what the server offers: MySQL performance_schema; MariaDB
   * METADATA_LOCK_INFO when the plugin is active, else performance_schema when it is on with the MDL instrument
   * enabled, else METADATA_LOCK_INFO (whose absence the poll then reports with what to run).
   */
  lockTable(flavour: MysqlFlavour): Promise<MysqlLockTable>;
  /** The poll statement for that table: raw rows. */
  userLocks(table: MysqlLockTable, queryChars: number, maxRows: number): Promise<unknown[]>;
  /**
   * IS_USED_LOCK(name) and the connection's user and host as that table's poll reads them (PROCESSLIST, or
   * performance_schema.threads, whose host has no port), read just before a KILL.
   */
  holderCheck(
    table: MysqlLockTable,
    name: Buffer,
    id: number,
  ): Promise<{ usedBy: number | null; user: string | null; host: string | null }>;
  /** KILL CONNECTION id. */
  kill(id: number): Promise<void>;
  close(): Promise<void>;
}
