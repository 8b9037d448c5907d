import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import mysql from "mysql2/promise";
import { freePort, waitFor } from "./ports";

/** The machine's MariaDB 10.11 (root, no password): tests make their own database and drop it. */
export const MYSQL_URL = process.env.TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306";

export interface MysqlTestDatabase {
  name: string;
  /** A new connection for the test, using the test's database. */
  connection(): Promise<mysql.Connection>;
  drop(): Promise<void>;
}

export async function createMysqlDatabase(
  prefix = "lockscope_test",
  serverUrl = MYSQL_URL,
): Promise<MysqlTestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = await mysql.createConnection(serverUrl);
  await admin.query(`CREATE DATABASE \`${name}\``);
  await admin.end();
  const conns: mysql.Connection[] = [];
  return {
    name,
    async connection() {
      const c = await mysql.createConnection(`${serverUrl}/${name}`);
      // A connection the test KILLs on purpose reports an error event: expected, not a crash.
      c.on("error", () => undefined);
      conns.push(c);
      return c;
    },
    async drop() {
      await Promise.all(conns.map((c) => c.end().catch(() => undefined)));
      const a = await mysql.createConnection(serverUrl);
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

export interface PrivateMariadb {
  port: number;
  /** mysql://root@127.0.0.1:<port> */
  url: string;
  /** Stops the server and removes its data directory. */
  destroy(): Promise<void>;
}

/**
 * A private mariadbd (the machine's MariaDB 10.11 binaries) with its own data directory (mariadb-install-db) on a
 * free loopback port, for tests that need server options the shared one was not started with. `args` are added to
 * mariadbd's command line, e.g. `--performance-schema=ON`. Stopped and removed by destroy(), and on a failed start.
 */
export async function startPrivateMariadb(args: string[] = []): Promise<PrivateMariadb> {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-maria-"));
  chmodSync(dir, 0o777);
  const data = path.join(dir, "data");
  const user = process.getuid?.() === 0 ? "root" : (userInfo().username ?? "mysql");
  let child: ChildProcess | null = null;
  const destroy = async () => {
    const c = child;
    child = null;
    if (c && c.exitCode === null && c.signalCode === null) {
      const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
      c.kill("SIGTERM");
      const timer = setTimeout(() => c.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const install = spawnSync(
      "mariadb-install-db",
      [
        "--no-defaults",
        `--datadir=${data}`,
        `--user=${user}`,
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
      ],
      { encoding: "utf8", timeout: 120_000 },
    );
    if (install.status !== 0) throw new Error(`mariadb-install-db failed: ${install.stderr || install.stdout}`);
    const port = await freePort();
    child = spawn(
      "mariadbd",
      [
        "--no-defaults",
        `--datadir=${data}`,
        `--user=${user}`,
        `--port=${port}`,
        "--bind-address=127.0.0.1",
        `--socket=${path.join(dir, "mysqld.sock")}`,
        `--pid-file=${path.join(dir, "mysqld.pid")}`,
        "--skip-log-bin",
        "--innodb-buffer-pool-size=32M",
        ...args,
      ],
      { stdio: ["ignore", "ignore", openSync(path.join(dir, "server.log"), "a")] },
    );
    const url = `mysql://root@127.0.0.1:${port}`;
    await waitFor(
      `private mariadbd on ${port}`,
      async () => {
        if (child?.exitCode !== null) throw new Error(`mariadbd exited: see ${path.join(dir, "server.log")}`);
        const c = await mysql.createConnection({ uri: url, connectTimeout: 1000 });
        await c.end();
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    return { port, url, destroy };
  } catch (err) {
    const log = (() => {
      try {
        return readFileSync(path.join(dir, "server.log"), "utf8").slice(-2000);
      } catch {
        return "";
      }
    })();
    await destroy();
    throw new Error(`${err instanceof Error ? err.message : String(err)}${log ? `\n${log}` : ""}`);
  }
}
