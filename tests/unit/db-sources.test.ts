import { describe, expect, it } from "vitest";
import { DEFAULT_DB_THRESHOLDS, type DbLockSettings } from "../../agent/sources/db-lock-settings";
import type { MysqlPort } from "../../agent/sources/mysql/mysql-port";
import { MysqlSource } from "../../agent/sources/mysql/mysql-source";
import type { PgPort } from "../../agent/sources/postgres/pg-port";
import { PostgresSource } from "../../agent/sources/postgres/pg-source";
import type { PgPollAsk, PgSessionRow } from "../../agent/sources/postgres/pg-snapshot";
import { pgAnswer, type FakePgServer } from "../harness/pg-answer";

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
/** The server holding these keys (pid 100 holds each), answered as PG_POLL_SQL would answer the agent's ask. */
const server = (objids: number[], sessions: PgSessionRow[] = [sessionRow]): { server: FakePgServer } => ({
  server: { rows: objids.map((objid) => ({ objid, pid: 100 })), sessions },
});

/** A PgPort that answers what the test queued (a fake server's state, or a raw answer), and records terminations. */
class FakePg implements PgPort {
  answers: Array<{ server: FakePgServer } | ((ask: PgPollAsk) => unknown) | Error | object> = [];
  terminated: Array<[number, string]> = [];
  /** What each poll asked (its signatures and session hashes; null entries: everything). */
  asks: PgPollAsk[] = [];
  async snapshot(
    _maxLocks: number,
    _queryChars: number,
    knownSignature: string | null,
    knownSessions?: number[] | null,
    _showQueries?: boolean,
    knownBuckets?: ReadonlyArray<string | null> | null,
    knownPids?: number[] | null,
  ) {
    const ask = {
      signature: knownSignature,
      sessionHashes: knownSessions ?? null,
      bucketSignatures: knownBuckets ? [...knownBuckets] : null,
      sessionPids: knownPids ?? null,
    };
    this.asks.push(ask);
    const a = this.answers.shift();
    if (a instanceof Error) throw a;
    if (typeof a === "function") return a(ask);
    return a && "server" in a ? pgAnswer(a.server as FakePgServer, ask) : a;
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

describe("PostgresSource", () => {
  it("turns polls into acquired and released events; a failed poll releases nothing and marks the source down", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    port.answers.push(server([1, 2]), new Error("connection refused"), server([2]));
    expect((await src.poll()).events.map((e) => [e.type, e.resource])).toEqual([
      ["acquired", "app:1"],
      ["acquired", "app:2"],
    ]);
    expect((await src.poll()).events).toEqual([]);
    expect(src.status()).toMatchObject({ up: false, error: "connection refused", locks: 2 });
    expect((await src.poll()).events.map((e) => [e.type, e.resource])).toEqual([["released", "app:1"]]);
    expect(src.status()).toMatchObject({ up: true, locks: 1 });
  });

  it("sends the signatures it has; rows left out are the known ones, and a reused pid is still a new owner", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    // The same rows, but pid 100 is now a newer session (another backend_start): only the sessions say so.
    const reused = { ...sessionRow, backendStart: "2026-12-01T09:59:59.5+00:00" };
    port.answers.push(server([1]), server([1]), server([1], [reused]));
    expect((await src.poll()).events.map((e) => e.type)).toEqual(["acquired"]);
    expect((await src.poll()).events).toEqual([]);
    expect(src.locks().map((l) => l.resource)).toEqual(["app:1"]);
    const swapped = await src.poll();
    expect(swapped.events.map((e) => [e.type, e.owner])).toEqual([
      ["owner-changed", "pid 100@2026-12-01T09:59:59.5+00:00"],
    ]);
    const first = pgAnswer(server([1]).server, null) as { signature: string };
    expect(port.asks.map((a) => a.signature)).toEqual([null, first.signature, first.signature]);
  });

  it("session rows left out for a hash it sent are the known ones, unless the server says the hash is gone; a gone hash it never sent is an error", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    const row = { ...sessionRow, h: 7 };
    // The server's answer with the session left out and these of its hashes said gone.
    const keep = (gone: number[]) => (ask: PgPollAsk) => ({
      ...(pgAnswer(server([1], [row]).server, ask) as object),
      sessions: [],
      sessionsGone: gone,
    });
    port.answers.push(server([1], [row]), keep([]), keep([8]), server([1], [row]), keep([7]));
    await src.poll();
    expect((await src.poll()).events).toEqual([]);
    expect(src.locks()[0]!.database!.holders[0]!.session).toMatchObject({ pid: 100, application: "worker" });
    // A hash it never sent is not this agent's answer.
    await src.poll();
    expect(src.status()).toMatchObject({ up: false, error: expect.stringContaining("hash 8 is not a known one") });
    await src.poll();
    expect(src.status()).toMatchObject({ up: true });
    // Gone and not sent again: the session ended between the server's reads; the lock shows no session row.
    await src.poll();
    expect(src.locks()[0]!.database!.holders[0]!.session).toMatchObject({ pid: 100, application: null });
    expect(port.asks.map((a) => a.sessionHashes)).toEqual([null, [7], [7], null, [7]]);
  });

  it("asks again for one bucket and one slice of the sessions each poll, and for everything after a failed poll", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    const row = { ...sessionRow, h: 7, pid: 100 };
    port.answers.push(server([1], [row]), server([1], [row]), server([1], [row]), new Error("connection reset"));
    port.answers.push(server([1], [row]));
    for (let i = 0; i < 5; i++) await src.poll();
    const nulls = (a: PgPollAsk) =>
      a.bucketSignatures === null ? "all" : a.bucketSignatures.flatMap((s, b) => (s === null ? [b] : []));
    // Poll 1 asks everything; poll 2 (slot 1) asks bucket 1 again, poll 3 bucket 2; after the failure, everything.
    expect(port.asks.map(nulls)).toEqual(["all", [1], [2], [3], "all"]);
    // pid 100 is in slice 100 % 64 = 36 only: its hash is sent on every poll after the first.
    expect(port.asks.map((a) => a.sessionHashes)).toEqual([null, [7], [7], [7], null]);
    expect(src.status()).toMatchObject({ up: true });
  });

  it("sends the pids of every lock row it has, with its session hashes, so the server can tell an unknown session in a bucket it does not send is involved", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    const a = { ...sessionRow, h: 7, pid: 100 };
    const b = { ...sessionRow, h: 8, pid: 200 };
    const two: { server: FakePgServer } = {
      server: {
        rows: [
          { objid: 1, pid: 100 },
          { objid: 2, pid: 200 },
          { objid: 3, pid: 200, granted: false },
        ],
        sessions: [a, b],
      },
    };
    port.answers.push(two, two, new Error("connection reset"), two);
    for (let i = 0; i < 4; i++) await src.poll();
    // The first poll and the one after a failure know nothing (null: the server then sends every involved session).
    expect(port.asks.map((x) => (x.sessionPids === null ? null : [...x.sessionPids].sort()))).toEqual([
      null,
      [100, 200],
      [100, 200],
      null,
    ]);
  });

  it("an answer that leaves out a bucket the agent asked for, or sends one it did not change, is an error, not an empty table", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    // Poll 2 asks again for bucket 1 (key 1's): an answer without it is not this agent's.
    const without = (ask: PgPollAsk) => ({ ...(pgAnswer(server([1]).server, ask) as object), buckets: [], locks: [] });
    // Another server's full answer sends buckets whose signature is the agent's.
    port.answers.push(server([1]), without, server([1]), pgAnswer(server([1]).server, null) as object);
    await src.poll();
    expect((await src.poll()).events).toEqual([]);
    expect(src.status()).toMatchObject({ up: false, locks: 1 });
    expect(src.status().error).toContain("bucket 1 was asked for but not sent");
    await src.poll();
    await src.poll();
    expect(src.status().error).toContain("sent with the signature the agent has");
    expect(src.locks().map((l) => l.resource)).toEqual(["app:1"]);
  });

  it("a truncated snapshot (more rows than DB_MAX_LOCKS) releases nothing and says so", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    // Five rows on the server, DB_MAX_LOCKS 2: the LIMIT cuts the rows of the buckets sent (1 gone; 3 to 6 new) to 3
    // and 4, so the buckets of 5 and 6 come without their rows.
    port.answers.push(server([1, 2]), (ask: PgPollAsk) => {
      const a = pgAnswer(server([2, 3, 4, 5, 6]).server, ask) as { locks: Array<{ objid: number[]; pid: number[] }> };
      return { ...a, locks: [{ ...a.locks[0]!, objid: [3, 4], pid: [100, 100] }] };
    });
    await src.poll();
    const out = await src.poll();
    expect(out.events.map((e) => [e.type, e.resource])).toEqual([
      ["acquired", "app:3"],
      ["acquired", "app:4"],
    ]);
    expect(
      src
        .locks()
        .map((l) => l.resource)
        .sort(),
    ).toEqual(["app:1", "app:2", "app:3", "app:4"]);
    expect(src.status().hazards?.[0]).toMatchObject({ code: "too-many-locks" });
  });

  it("a malformed snapshot is an error naming the field, not a crash", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    port.answers.push({ now: "x", total: 1, signature: "1:1", buckets: [], locks: "no", blocking: [], sessions: [] });
    await src.poll();
    expect(src.status().error).toContain("locks");
  });

  it("release: a dry run ends nothing; a real release terminates the exact pid and backend start", async () => {
    const port = new FakePg();
    const src = pgSource(port);
    // Each release reads the server afresh first; the real one re-reads after ending the session.
    port.answers.push(server([1]), server([1]), server([1]), server([]));
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
