import type { MysqlFlavour } from "./mysql-locks-model";

/** The only statements the MySQL/MariaDB source runs. */
export interface MysqlPort {
  /** SELECT VERSION(): MariaDB says so in it. */
  flavour(): Promise<MysqlFlavour>;
  /** The poll statement of that flavour: raw rows. */
  userLocks(flavour: MysqlFlavour, queryChars: number, maxRows: number): Promise<unknown[]>;
  /** IS_USED_LOCK(name) and the connection's USER and HOST, read just before a KILL. */
  holderCheck(name: Buffer, id: number): Promise<{ usedBy: number | null; user: string | null; host: string | null }>;
  /** KILL CONNECTION id. */
  kill(id: number): Promise<void>;
  close(): Promise<void>;
}
