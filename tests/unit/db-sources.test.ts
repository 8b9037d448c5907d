import { describe, expect, it } from "vitest";
import { DEFAULT_DB_THRESHOLDS, type DbLockSettings } from "../../agent/sources/db-lock-settings";
import type { MysqlPort } from "../../agent/sources/mysql/mysql-port";
import { MysqlSource } from "../../agent/sources/mysql/mysql-source";
import type { PgPort } from "../../agent/sources/postgres/pg-port";
import { PostgresSource } from "../../agent/sources/postgres/pg-source";

const settings: DbLockSettings = {
  thresholds: DEFAULT_DB_THRESHOLDS,
  statementTimeoutMs: 2000,
  maxLocks: 2,
  showQueries: false,
  queryChars: 200,
};

const sessionRow = {
  pid: 100,
  backendStart: "2026-12-01T09:00:00.5+00:00",
  user: "app",
  application: "worker",
  clientAddr: "10.0.0.1",
  clientPort: 5000,
  db: "app",
  state: "idle",
  xactStart: null,
  queryStart: "2026-12-01T09:59:00+00:00",
  stateChange: "2026-12-01T09:59:00+00:00",
  query: "select 1",
};
const snapshot = (objids: number[], total = objids.length) => ({
  now: "2026-12-01T10:00:00+00:00",
  total,
  signature: `${total}:${objids.join("+")}`,
  changed: true,
  locks: [
    {
      database: 5,
      objsubid: 1,
      shared: false,
      granted: true,
      classid: null,
      objid: objids,
      pid: objids.map(() => 100),
      waitstart: null,
    },
  ],
  databases: [[5, "app"]],
  blocking: [],
  sessions: [sessionRow],
});

/** A PgPort that answers what the test queued, and records terminations. */
class FakePg implements PgPort {
  answers: Array<unknown | Error> = [];
  terminated: Array<[number, string]> = [];
  /** The signature each poll sent (null: the rows in full). */
  signatures: Array<string | null> = [];
  /** The session hashes each poll sent (null: every session in full). */
  sessionHashes: Array<number[] | null | undefined> = [];
  async snapshot(
    _maxLocks: number,
    _queryChars: number,
    knownSignature: string | null,
    knownSessions?: number[] | null,
  ) {
    this.signatures.push(knownSignature);
    this.sessionHashes.push(knownSessions);
    const a = this.answers.shift();
    if (a instanceof Error) throw a;
    return a;
  }
  async sessionLocks() {
    return [{ locktype: "advisory", mode: "ExclusiveLock", count: 1 }];
  }
  async terminate(pid: number, backendStart: string) {
    this.terminated.push([pid, backendStart]);
    return { matched: true, terminated: true };
  }
  async close() {}
}

function pgSource(port: PgPort, now = () => Date.parse("2026-12-01T10:00:00.100Z")) {
  let n = 0;
  return new PostgresSource(port, {
    sourceId: "postgresql://db:5432",
    agentId: "a",
    newId: () => `id-${++n}`,
    log: () => undefined,
    settings,
    now,
  });
}

/** The server's answer when the signature sent is its own: no lock rows, fresh sessions. */
const unchanged = (snap: ReturnType<typeof snapshot>, sessions = snap.sessions) => ({
  ...snap,
  changed: false,
  locks: null,
  databases: null,
  sessions,
});

describe("PostgresSource", () => {
  it("turns polls into acquired and released events; a failed poll releases nothing and marks the source down", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    port.answers.push(snapshot([1, 2]), new Error("connection refused"), snapshot([2]));
    expect((await src.poll()).events.map((e) => [e.type, e.resource])).toEqual([
      ["acquired", "app:1"],
      ["acquired", "app:2"],
    ]);
    expect((await src.poll()).events).toEqual([]);
    expect(src.status()).toMatchObject({ up: false, error: "connection refused", locks: 2 });
    expect((await src.poll()).events.map((e) => [e.type, e.resource])).toEqual([["released", "app:1"]]);
    expect(src.status()).toMatchObject({ up: true, locks: 1 });
  });

  it("sends the signature it has; rows left out are the known ones, and a reused pid is still a new owner", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    const first = snapshot([1]);
    // The same rows, but pid 100 is now a newer session (another backend_start): only the sessions say so.
    const reused = { ...sessionRow, backendStart: "2026-12-01T09:59:59.5+00:00" };
    port.answers.push(first, unchanged(first), unchanged(first, [reused]));
    expect((await src.poll()).events.map((e) => e.type)).toEqual(["acquired"]);
    expect((await src.poll()).events).toEqual([]);
    expect(src.locks().map((l) => l.resource)).toEqual(["app:1"]);
    const swapped = await src.poll();
    expect(swapped.events.map((e) => [e.type, e.owner])).toEqual([
      ["owner-changed", "pid 100@2026-12-01T09:59:59.5+00:00"],
    ]);
    expect(port.signatures).toEqual([null, first.signature, first.signature]);
  });

  it("session rows left out for a hash it sent are the known ones, unless the server says the hash is gone; a gone hash it never sent is an error", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    const gone = (...h: number[]) => ({ sessionsGone: h });
    const first = { ...snapshot([1]), sessions: [{ ...sessionRow, h: 7 }] };
    port.answers.push(
      first,
      { ...unchanged(first, []), ...gone() },
      // A hash it never sent is not this agent's answer.
      { ...unchanged(first, []), ...gone(8) },
      first,
      // Gone and not sent again: the session ended between the server's reads; the lock shows no session row.
      { ...unchanged(first, []), ...gone(7) },
    );
    await src.poll();
    expect((await src.poll()).events).toEqual([]);
    expect(src.locks()[0]!.database!.holders[0]!.session).toMatchObject({ pid: 100, application: "worker" });
    await src.poll();
    expect(src.status()).toMatchObject({ up: false, error: expect.stringContaining("hash 8 is not a known one") });
    await src.poll();
    expect(src.status()).toMatchObject({ up: true });
    await src.poll();
    expect(src.locks()[0]!.database!.holders[0]!.session).toMatchObject({ pid: 100, application: null });
    expect(port.sessionHashes).toEqual([null, [7], [7], null, [7]]);
  });

  it("asks for the rows in full at least once a minute, and after a failed poll", async () => {
    const port = new FakePg();
    let t = Date.parse("2026-12-01T10:00:00.100Z");
    const src = pgSource(port, () => t);
    const snap = snapshot([1]);
    port.answers.push(snap, unchanged(snap), snap, new Error("connection reset"), snap);
    await src.poll();
    t += 59_000;
    await src.poll();
    t += 2_000;
    await src.poll();
    await src.poll();
    await src.poll();
    expect(port.signatures).toEqual([null, snap.signature, null, snap.signature, null]);
  });

  it("a snapshot that leaves the rows out for a signature the agent did not send is an error, not an empty table", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    const snap = snapshot([1]);
    port.answers.push(snap, { ...unchanged(snap), signature: "1:other" });
    await src.poll();
    expect((await src.poll()).events).toEqual([]);
    expect(src.status()).toMatchObject({ up: false, locks: 1 });
    expect(src.status().error).toContain("not the known one");
  });

  it("a truncated snapshot (more rows than DB_MAX_LOCKS) releases nothing and says so", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    port.answers.push(snapshot([1, 2]), snapshot([2, 3], 5));
    await src.poll();
    const out = await src.poll();
    expect(out.events.map((e) => e.type)).toEqual(["acquired"]);
    expect(src.status().hazards?.[0]).toMatchObject({ code: "too-many-locks" });
  });

  it("a malformed snapshot is an error naming the field, not a crash", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    port.answers.push({ now: "x", total: 1, signature: "1:1", changed: true, locks: "no", blocking: [], sessions: [] });
    await src.poll();
    expect(src.status().error).toContain("locks");
  });

  it("release: a dry run ends nothing; a real release terminates the exact pid and backend start", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    // Each release reads the server afresh first; the real one re-reads after ending the session.
    port.answers.push(snapshot([1]), snapshot([1]), snapshot([1]), snapshot([]));
    await src.poll();
    const lock = src.locks()[0]!;
    const cmd = {
      requestId: "r",
      lockId: lock.id,
      expectedOwner: lock.owner!,
      expectedFingerprint: lock.ownerFingerprint!,
      actor: "t",
      reason: "stuck",
    };
    expect((await src.release({ ...cmd, dryRun: true })).result.outcome).toBe("dry-run");
    expect(port.terminated).toEqual([]);
    const real = await src.release({ ...cmd, dryRun: false });
    expect(real.result.outcome).toBe("released");
    expect(port.terminated).toEqual([[100, "2026-12-01T09:00:00.5+00:00"]]);
    expect(real.output.events.map((e) => e.type)).toEqual(["released"]);
  });
});

class FakeMysql implements MysqlPort {
  answers: Array<unknown[] | Error> = [];
  killed: number[] = [];
  usedBy: number | null = 10;
  async flavour() {
    return "mariadb" as const;
  }
  async lockTable() {
    return "metadata_lock_info" as const;
  }
  async userLocks() {
    const a = this.answers.shift()!;
    if (a instanceof Error) throw a;
    return a;
  }
  async holderCheck() {
    return { usedBy: this.usedBy, user: "root", host: "10.0.0.1:5000" };
  }
  async kill(id: number) {
    this.killed.push(id);
  }
  async close() {}
}

const myRow = {
  k: "h",
  id: 10,
  name_hex: Buffer.from("job").toString("hex"),
  user: "root",
  host: "10.0.0.1:5000",
  db: null,
  command: "Sleep",
  time_ms: 1000,
  state: "",
  info: null,
};

function mySource(port: MysqlPort) {
  return new MysqlSource(port, {
    sourceId: "mysql://db:3306",
    agentId: "a",
    newId: () => Math.random().toString(36),
    log: () => undefined,
    settings,
  });
}

describe("MysqlSource", () => {
  it("a missing METADATA_LOCK_INFO is a down source whose error names what to run", async () => {
    const port = new FakeMysql();
    const src = mySource(port);
    port.answers.push(
      Object.assign(new Error("Unknown table 'METADATA_LOCK_INFO' in information_schema"), { errno: 1109 }),
    );
    await src.poll();
    expect(src.status()).toMatchObject({ up: false });
    expect(src.status().error).toContain("INSTALL SONAME 'metadata_lock_info'");
  });

  it("KILLs only after IS_USED_LOCK still names the holder", async () => {
    const port = new FakeMysql();
    const src = mySource(port);
    port.answers.push([myRow]);
    await src.poll();
    const lock = src.locks()[0]!;
    const cmd = {
      requestId: "r",
      lockId: lock.id,
      expectedOwner: lock.owner!,
      expectedFingerprint: lock.ownerFingerprint!,
      actor: "t",
      reason: "stuck",
      dryRun: false,
    };
    // The fresh read still shows connection 10, but IS_USED_LOCK (checked just before KILL) names 11.
    port.answers.push([myRow]);
    port.usedBy = 11;
    expect((await src.release(cmd)).result.outcome).toBe("refused-owner-changed");
    expect(port.killed).toEqual([]);
    port.answers.push([myRow], []);
    port.usedBy = 10;
    expect((await src.release(cmd)).result.outcome).toBe("released");
    expect(port.killed).toEqual([10]);
  });
});
