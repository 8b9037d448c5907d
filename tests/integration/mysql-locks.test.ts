import { randomUUID } from "node:crypto";
import type mysql from "mysql2/promise";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Lock, LockEvent } from "../../lib/contract/lock";
import { DEFAULT_DB_THRESHOLDS, type DbLockSettings } from "../../agent/sources/db-lock-settings";
import { Mysql2Port } from "../../agent/sources/mysql/mysql-client";
import { MysqlSource } from "../../agent/sources/mysql/mysql-source";
import {
  connectionId,
  createMysqlDatabase,
  metadataLockInfoInstalled,
  MYSQL_URL,
  setMetadataLockInfo,
  startPrivateMariadb,
  type MysqlTestDatabase,
  type PrivateMariadb,
} from "../harness/mysql";
import { waitFor } from "../harness/ports";
import { releaseCommandFor } from "../harness/release-command";

// The plugin state is restored after the file: installed only if it was installed before.
let pluginWasInstalled = false;
beforeAll(async () => {
  pluginWasInstalled = await metadataLockInfoInstalled();
});
afterAll(async () => {
  await setMetadataLockInfo(pluginWasInstalled);
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function settings(overrides: Partial<DbLockSettings["thresholds"]> = {}): DbLockSettings {
  return {
    thresholds: { ...DEFAULT_DB_THRESHOLDS, ...overrides },
    statementTimeoutMs: 2000,
    maxLocks: 50_000,
    showQueries: false,
    queryChars: 200,
  };
}

async function setup(
  s = settings(),
  url = MYSQL_URL,
): Promise<{ db: MysqlTestDatabase; source: MysqlSource; events: LockEvent[] }> {
  const db = await createMysqlDatabase("lockscope_mylocks", url);
  const port = new Mysql2Port({ url, statementTimeoutMs: s.statementTimeoutMs, connectTimeoutMs: 2000 });
  const source = new MysqlSource(port, {
    sourceId: url,
    agentId: "test-agent",
    newId: randomUUID,
    log: () => undefined,
    settings: s,
  });
  cleanups.push(async () => {
    await port.close();
    await db.drop();
  });
  return { db, source, events: [] };
}

async function pollInto(source: MysqlSource, events: LockEvent[]): Promise<Lock[]> {
  const out = await source.poll();
  events.push(...out.events);
  expect(source.status().error).toBeUndefined();
  return source.locks();
}

async function waitUntilWaiting(c: mysql.Connection, id: number): Promise<void> {
  await waitFor(`connection ${id} waiting in GET_LOCK`, async () => {
    const [rows] = await c.query<mysql.RowDataPacket[]>(
      "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE = 'User lock'",
      [id],
    );
    return rows.length > 0;
  });
}

const release = releaseCommandFor;

describe("MariaDB user-level locks (GET_LOCK) from real connections", () => {
  it("without the metadata_lock_info plugin: the source is down with an error naming what to run", async () => {
    const { source } = await setup();
    await setMetadataLockInfo(false);
    await source.poll();
    expect(source.status()).toMatchObject({ up: false, kind: "mysql" });
    expect(source.status().error).toContain("INSTALL SONAME 'metadata_lock_info'");
    await setMetadataLockInfo(true);
    await source.poll();
    expect(source.status()).toMatchObject({ up: true });
  });

  it("shows holders with connection id, user and host, waiters with their wait, and hostile names escaped", async () => {
    await setMetadataLockInfo(true);
    const { db, source, events } = await setup(settings({ longWaitMs: 300, idleHolderMs: 1000 }));
    const holder = await db.connection();
    const waiter = await db.connection();
    const observer = await db.connection();
    const [hid, wid] = [await connectionId(holder), await connectionId(waiter)];
    const quoted = `${db.name} job's "lock" \\ \u202e`;
    const long = `${db.name}-${"x".repeat(80)}`;
    const binary = Buffer.concat([Buffer.from(`${db.name}-bin-`), Buffer.from([0xff, 0x00, 0x41])]);
    const control = `${db.name}-ctl-\u0001\u0007`;
    await holder.query("SELECT GET_LOCK(?, 0), GET_LOCK(?, 0), GET_LOCK(?, 0), GET_LOCK(?, 0)", [
      quoted,
      long,
      binary,
      control,
    ]);
    const waits = waiter.query("SELECT GET_LOCK(?, 20)", [quoted]);
    await waitUntilWaiting(observer, wid);

    let locks: Lock[] = [];
    await waitFor("the long-wait and leaked-lock hazards", async () => {
      locks = (await pollInto(source, events)).filter((l) => l.resource.includes(db.name));
      const q = locks.find((l) => l.resource.startsWith(`${db.name} job`));
      return (
        (q?.hazards.some((h) => h.code === "db-long-wait") ?? false) &&
        (q?.hazards.some((h) => h.code === "db-leaked-lock") ?? false)
      );
    });
    const q = locks.find((l) => l.resource.startsWith(`${db.name} job`))!;
    expect(q.resource).toBe(`${db.name} job's "lock" \\\\ \\u{202e}`);
    expect(q.owner).toMatch(new RegExp(`^connection ${hid} \\(root@127\\.0\\.0\\.1:\\d+\\)$`));
    expect(q.holder).toMatchObject({ connection: hid, user: "root", level: "session" });
    expect(q.waiters).toHaveLength(1);
    expect(q.waiters[0]!.owner).toBe(`connection ${wid}`);
    expect(q.database!.waiters[0]!.blockedBy).toEqual([hid]);
    // The server keeps 64 characters of a name: the lock is shown cut, and says so.
    const cut = locks.find((l) => l.resource.startsWith(`${db.name}-xxx`))!;
    expect(cut.resource.length).toBeLessThanOrEqual(64);
    expect(String(cut.holder!.nameNote)).toContain("64 characters");
    // A name that is not UTF-8 reaches the information table already converted by the server: MariaDB 10.11 shows
    // "?" for the bad byte and drops the rest. Control characters are escaped.
    const bin = locks.find((l) => l.resource.startsWith(`${db.name}-bin-`))!;
    expect(bin.resource).toBe(`${db.name}-bin-?`);
    expect(locks.find((l) => l.resource.startsWith(`${db.name}-ctl-`))!.resource).toBe(`${db.name}-ctl-\\x01\\x07`);
    expect(locks).toHaveLength(4);

    await holder.query("SELECT RELEASE_LOCK(?)", [quoted]);
    await waits;
    await waitFor("the waiter holding", async () => {
      const l = (await pollInto(source, events)).find((x) => x.resource.startsWith(`${db.name} job`));
      return l?.holder?.connection === wid;
    });
  });

  it("ending the holder's connection lets the waiter hold; the guard refuses a lock that moved", async () => {
    await setMetadataLockInfo(true);
    const { db, source, events } = await setup();
    const a = await db.connection();
    const b = await db.connection();
    const observer = await db.connection();
    const [aid, bid] = [await connectionId(a), await connectionId(b)];
    const name = `${db.name}-kill`;
    await a.query("SELECT GET_LOCK(?, 0)", [name]);
    const bWaits = b.query("SELECT GET_LOCK(?, 20) AS got", [name]);
    await waitUntilWaiting(observer, bid);
    let lock = (await pollInto(source, events)).find((l) => l.resource === name)!;

    const dry = await source.release(release(lock, true));
    expect(dry.result.outcome).toBe("dry-run");
    expect(dry.result.plan.join("\n")).toContain(`KILL CONNECTION ${aid}`);

    const real = await source.release(release(lock, false));
    expect(real.result.outcome).toBe("released");
    const [[got]] = (await bWaits) as unknown as [[{ got: number }]];
    expect(got.got).toBe(1);
    await waitFor("B holding", async () => {
      lock = (await pollInto(source, events)).find((l) => l.resource === name)!;
      return lock?.holder?.connection === bid;
    });

    // B releases after the operator looked: the release's fresh read finds no holder, so B is not killed.
    await b.query("SELECT RELEASE_LOCK(?)", [name]);
    const refused = await source.release(release(lock, false));
    expect(refused.result.outcome).toBe("nothing-to-do");
    const [[alive]] = (await b.query("SELECT 1 AS alive")) as unknown as [[{ alive: number }]];
    expect(alive.alive).toBe(1);
  });
});

/**
 * The performance_schema path (the MySQL 8 statement, MYSQL8_POLL_SQL) on a real server: MariaDB 10.11's own
 * performance_schema, on a private mariadbd started with performance_schema=ON and the MDL instrument enabled (no
 * metadata_lock_info plugin). This is MariaDB's performance_schema, not MySQL 8: no MySQL 8 server is installed here, so
 * whatever MySQL 8 does differently in metadata_locks or threads is not tested.
 */
describe("GET_LOCK locks from MariaDB's performance_schema.metadata_locks (the MySQL 8 statement)", () => {
  let server: PrivateMariadb;
  beforeAll(async () => {
    server = await startPrivateMariadb([
      "--performance-schema=ON",
      "--performance-schema-instrument=wait/lock/metadata/sql/mdl=ON",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  it("chooses performance_schema, shows the holder and the PENDING waiter by name, and a kill hands the lock over", async () => {
    const { db, source, events } = await setup(settings(), server.url);
    const holder = await db.connection();
    const waiter = await db.connection();
    const [hid, wid] = [await connectionId(holder), await connectionId(waiter)];
    const quoted = `${db.name} job's "lock" \\ \u202e`;
    const long = `${db.name}-${"x".repeat(80)}`;
    await holder.query("SELECT GET_LOCK(?, 0), GET_LOCK(?, 0)", [quoted, long]);
    // A prepared statement: its text does not name the lock, the PENDING row does.
    const waits = waiter.execute("SELECT GET_LOCK(?, 20) AS got", [quoted]);
    let q: Lock | undefined;
    await waitFor("the PENDING waiter", async () => {
      q = (await pollInto(source, events)).find((l) => l.resource.startsWith(`${db.name} job`));
      return (q?.waiters.length ?? 0) > 0;
    });
    expect(q!.rule).toBe("performance_schema.metadata_locks USER LEVEL LOCK");
    expect(q!.library).toBe("mariadb-get-lock");
    expect(q!.resource).toBe(`${db.name} job's "lock" \\\\ \\u{202e}`);
    // performance_schema.threads gives the host without the port (here the server's name for 127.0.0.1).
    expect(q!.owner).toMatch(new RegExp(`^connection ${hid} \\(root@[^:@()]+\\)$`));
    expect(q!.holder).toMatchObject({ connection: hid, user: "root", level: "session" });
    expect(q!.waiters).toEqual([
      expect.objectContaining({
        owner: `connection ${wid}`,
        detail: expect.stringMatching(/^root@[^:@()]+; PENDING in metadata_locks$/),
      }),
    ]);
    expect(q!.database!.waiters[0]!.blockedBy).toEqual([hid]);
    const cut = source.locks().find((l) => l.resource.startsWith(`${db.name}-xxx`))!;
    expect(cut.resource.length).toBeLessThanOrEqual(64);
    expect(source.status().error).toBeUndefined();

    // The release guard reads user and host where the poll did (threads): it matches, and the kill hands over.
    const real = await source.release(release(q!, false));
    expect(real.result.outcome).toBe("released");
    const [[got]] = (await waits) as unknown as [[{ got: number }]];
    expect(got.got).toBe(1);
    await waitFor("the waiter holding", async () => {
      const l = (await pollInto(source, events)).find((x) => x.resource.startsWith(`${db.name} job`));
      return l?.holder?.connection === wid;
    });
  });
});
