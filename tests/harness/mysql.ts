import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";

/** The machine's MariaDB 10.11 (root, no password): tests make their own database and drop it. */
export const MYSQL_URL = process.env.TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306";

export interface MysqlTestDatabase {
  name: string;
  /** A new connection for the test, using the test's database. */
  connection(): Promise<mysql.Connection>;
  drop(): Promise<void>;
}

export async function createMysqlDatabase(prefix = "lockscope_test"): Promise<MysqlTestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = await mysql.createConnection(MYSQL_URL);
  await admin.query(`CREATE DATABASE \`${name}\``);
  await admin.end();
  const conns: mysql.Connection[] = [];
  return {
    name,
    async connection() {
      const c = await mysql.createConnection(`${MYSQL_URL}/${name}`);
      // A connection the test KILLs on purpose reports an error event: expected, not a crash.
      c.on("error", () => undefined);
      conns.push(c);
      return c;
    },
    async drop() {
      await Promise.all(conns.map((c) => c.end().catch(() => undefined)));
      const a = await mysql.createConnection(MYSQL_URL);
      await a.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await a.end();
    },
  };
}

/** Whether MariaDB's metadata_lock_info plugin is installed (what the MariaDB source needs). */
export async function metadataLockInfoInstalled(): Promise<boolean> {
  const a = await mysql.createConnection(MYSQL_URL);
  try {
    const [rows] = await a.query<mysql.RowDataPacket[]>(
      "SELECT 1 FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'METADATA_LOCK_INFO' AND PLUGIN_STATUS = 'ACTIVE'",
    );
    return rows.length > 0;
  } finally {
    await a.end();
  }
}

/** Installs or uninstalls the plugin, as an administrator would (the agent never does this itself). */
export async function setMetadataLockInfo(installed: boolean): Promise<void> {
  if ((await metadataLockInfoInstalled()) === installed) return;
  const a = await mysql.createConnection(MYSQL_URL);
  try {
    await a.query(installed ? "INSTALL SONAME 'metadata_lock_info'" : "UNINSTALL SONAME 'metadata_lock_info'");
  } finally {
    await a.end();
  }
}

export async function connectionId(c: mysql.Connection): Promise<number> {
  const [rows] = await c.query<mysql.RowDataPacket[]>("SELECT CONNECTION_ID() AS id");
  return Number(rows[0]!.id);
}
