import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { Lock, LockEvent } from "../../lib/contract/lock";
import { DEFAULT_DB_THRESHOLDS, type DbLockSettings } from "../../agent/sources/db-lock-settings";
import { NodePgPort, PG_POLL_STATEMENT, pgPollQuery, pgSessionOptions } from "../../agent/sources/postgres/pg-client";
import { pgLockBucket } from "../../agent/sources/postgres/pg-poll-sql";
import { parsePgSnapshot, pgPollAsk, type KnownPgLocks } from "../../agent/sources/postgres/pg-snapshot";
import type { PgPort } from "../../agent/sources/postgres/pg-port";
import { PostgresSource } from "../../agent/sources/postgres/pg-source";
import { backendPid, createPgDatabase, PG_ADMIN_URL, type PgTestDatabase } from "../harness/postgres";
import { waitFor } from "../harness/ports";
import { releaseCommandFor } from "../harness/release-command";

// Every test makes its own database; the source sees the whole server, so assertions look only at that database.
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function settings(overrides: Partial<DbLockSettings["thresholds"]> = {}, showQueries = false): DbLockSettings {
  return {
    thresholds: { ...DEFAULT_DB_THRESHOLDS, ...overrides },
    statementTimeoutMs: 2000,
    maxLocks: 50_000,
    showQueries,
    queryChars: 200,
  };
}

/** The source under test, on a port of the test's choosing. */
function sourceOn(port: NodePgPort, s: DbLockSettings): PostgresSource {
  return new PostgresSource(port, {
    sourceId: "postgresql://127.0.0.1:5432",
    agentId: "test-agent",
    newId: randomUUID,
    log: () => undefined,
    settings: s,
  });
}

async function setup(
  s: DbLockSettings = settings(),
  exactName?: string,
): Promise<{ db: PgTestDatabase; source: PostgresSource; port: NodePgPort; events: LockEvent[] }> {
  const db = await createPgDatabase("lockscope_pglocks", exactName);
  const port = new NodePgPort({ url: PG_ADMIN_URL, statementTimeoutMs: s.statementTimeoutMs, connectTimeoutMs: 2000 });
  const source = sourceOn(port, s);
  cleanups.push(async () => {
    await port.close();
    await db.drop();
  });
  return { db, source, port, events: [] };
}

async function pollInto(source: PostgresSource, events: LockEvent[]): Promise<Lock[]> {
  const out = await source.poll();
  events.push(...out.events);
  return source.locks();
}

/** The parts of PG_POLL_SQL's answer the bucket test reads. */
interface RawAnswer {
  buckets: Array<[number, string]>;
  locks: Array<{ database: number; granted: boolean; objid: number[]; pid: number[] }>;
}

function mine(locks: Lock[], db: PgTestDatabase, key: string): Lock | undefined {
  return locks.find((l) => l.resource === `${db.name}:${key}`);
}

/** Waits until the server shows the session waiting on a lock (so the test never races the blocking call). */
async function waitUntilWaiting(admin: pg.Client, pid: number): Promise<void> {
  await waitFor(`pid ${pid} waiting on a lock`, async () => {
    const r = await admin.query("SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted", [pid]);
    return r.rows.length > 0;
  });
}

const release = releaseCommandFor;

describe("PostgreSQL advisory locks from real sessions", () => {
  it("shows holders, waiters and a blocking chain of three to its root; ending the root's session lets the waiter hold", async () => {
    const { db, source, events } = await setup(settings({ longWaitMs: 200 }));
    const a = await db.session("holder-a");
    const b = await db.session("middle-b");
    const c = await db.session("waiter-c");
    const admin = await db.session("observer");
    const [pa, pb, pc] = [await backendPid(a), await backendPid(b), await backendPid(c)];
    await a.query("SELECT pg_advisory_lock(1001)");
    await b.query("SELECT pg_advisory_lock(1002)");
    const bWaits = b.query("SELECT pg_advisory_lock(1001)");
    await waitUntilWaiting(admin, pb);
    const cWaits = c.query("SELECT pg_advisory_lock(1002)");
    await waitUntilWaiting(admin, pc);

    let locks = await pollInto(source, events);
    const k1 = mine(locks, db, "1001")!;
    const k2 = mine(locks, db, "1002")!;
    expect(k1.database!.holders.map((h) => h.session.pid)).toEqual([pa]);
    expect(k1.holder).toMatchObject({ pid: pa, application: "holder-a", level: "session", mode: "exclusive" });
    expect(k1.waiters.map((w) => w.owner)).toEqual([`pid ${pb}`]);
    // SHOW_QUERIES is off here: no query text leaves the agent.
    expect(k1.holder!.query).toBeUndefined();
    expect(k1.database!.holders[0]!.session.query).toBeUndefined();
    expect(k2.database!.holders.map((h) => h.session.pid)).toEqual([pb]);
    expect(k2.database!.waiters[0]).toMatchObject({ blockedBy: [pb], chain: [pc, pb, pa] });
    expect(k2.waiters[0]!.detail).toContain(`chain ${pc} → ${pb} → ${pa}`);
    // The agent's own session never holds or waits on an advisory lock.
    expect(locks.flatMap((l) => l.database!.holders).some((h) => h.session.application === "lockscope-agent")).toBe(
      false,
    );
    await waitFor("the long-wait hazard", async () => {
      locks = await pollInto(source, events);
      return mine(locks, db, "1002")!.hazards.some((h) => h.code === "db-long-wait");
    });
    expect(mine(locks, db, "1002")!.hazards.find((h) => h.code === "db-long-wait")!.message).toContain(
      `root blocker pid ${pa}`,
    );

    // The dry run names the session and every other lock it holds; nothing is ended.
    await a.query("SELECT pg_advisory_lock(1003)");
    await pollInto(source, events);
    const dry = await source.release(release(mine(source.locks(), db, "1001")!, true));
    expect(dry.result.outcome).toBe("dry-run");
    expect(dry.result.plan.join("\n")).toContain(`End session pid ${pa}`);
    expect(dry.result.plan.join("\n")).toContain(`${db.name}:1003`);
    expect(dry.result.plan.join("\n")).toMatch(/advisory ExclusiveLock/);
    expect((await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pa])).rows).toHaveLength(1);

    // The real release ends the holder's session; the waiter B then holds 1001, and C still waits behind B.
    const real = await source.release(release(mine(source.locks(), db, "1001")!, false));
    expect(real.result.outcome).toBe("released");
    events.push(...real.output.events);
    await bWaits;
    await waitFor("B holding 1001", async () => {
      locks = await pollInto(source, events);
      return mine(locks, db, "1001")?.database?.holders[0]?.session.pid === pb;
    });
    // Either one poll saw the hand-over (owner-changed) or two did (released, then acquired): B holds it last.
    const k1Events = events.filter((e) => e.resource === `${db.name}:1001`);
    expect(k1Events.at(-1)).toMatchObject({ owner: expect.stringMatching(new RegExp(`^pid ${pb}@`)) });
    expect(k1Events.some((e) => e.type === "released" || e.type === "owner-changed")).toBe(true);
    expect(mine(locks, db, "1003")).toBeUndefined();
    await b.query("SELECT pg_advisory_unlock(1002)");
    await cWaits;
  });

  it("the buckets: after a change only the changed key's bucket comes, and the view is exactly right (new lock, released lock, holder swap with equal counts, waiter appears)", async () => {
    const { db, port, events } = await setup();
    // The source on a port that records each ask and answer.
    const polls: Array<{ asked: ReadonlyArray<string | null> | null; raw: RawAnswer }> = [];
    const spy: PgPort = {
      snapshot: async (maxLocks, queryChars, known, sessions, showQueries, buckets, pids) => {
        const raw = await port.snapshot(maxLocks, queryChars, known, sessions, showQueries, buckets, pids);
        polls.push({ asked: buckets ?? null, raw: raw as RawAnswer });
        return raw;
      },
      sessionLocks: (pid) => port.sessionLocks(pid),
      terminate: (pid, start, waitMs) => port.terminate(pid, start, waitMs),
      close: () => port.close(),
    };
    const source = new PostgresSource(spy, {
      sourceId: "postgresql://127.0.0.1:5432",
      agentId: "test-agent",
      newId: randomUUID,
      log: () => undefined,
      settings: settings(),
    });
    const admin = await db.session("observer");
    const oid = Number((await admin.query("SELECT oid FROM pg_database WHERE datname = $1", [db.name])).rows[0].oid);
    // Keys no other test uses, each in its own bucket.
    const [K1, K2, K3] = [9_100_001, 9_100_002, 9_100_003];
    expect(new Set([K1, K2, K3].map((k) => pgLockBucket(0, k))).size).toBe(3);
    /** Our database's rows in the last answer, as key:pid (waiters marked). */
    const ourRows = () =>
      polls
        .at(-1)!
        .raw.locks.filter((g) => g.database === oid)
        .flatMap((g) => g.objid.map((k, i) => `${k}:${g.pid[i]}${g.granted ? "" : " waits"}`))
        .sort();
    const sentBuckets = () => new Set(polls.at(-1)!.raw.buckets.map(([b]) => b));
    /** Our keys whose buckets came without being changed by this test: those the poll asked for again. */
    const askedAgain = (keys: number[]) => keys.filter((k) => polls.at(-1)!.asked?.[pgLockBucket(0, k)] === null);
    const view = (k: number) => mine(source.locks(), db, String(k));
    const a = await db.session("bucket-a");
    const b = await db.session("bucket-b");
    const c = await db.session("bucket-c");
    const [pa, pb, pc] = [await backendPid(a), await backendPid(b), await backendPid(c)];
    const rowsOf = (entries: Array<[number, number, string?]>) => entries.map(([k, p, w]) => `${k}:${p}${w ?? ""}`);
    await a.query("SELECT pg_advisory_lock($1)", [K1]);
    await b.query("SELECT pg_advisory_lock($1)", [K2]);
    await pollInto(source, events);
    expect(polls[0]!.raw.buckets).toHaveLength(127);
    // Other tests on this server may take locks meanwhile: each step polls until one poll sends our keys' buckets
    // only as this test changed them or as the poll asked for them again (so none of our other keys comes).
    const step = async (what: string, changed: number[], expected: Array<[number, number, string?]>) => {
      const held = new Map(expected.map(([k, p, w]) => [k, w ? null : p]));
      await waitFor(what, async () => {
        await pollInto(source, events);
        const keys = [...new Set([...changed, ...askedAgain([K1, K2, K3])])];
        const want = rowsOf(expected.filter(([k]) => keys.includes(k))).sort();
        return (
          changed.every((k) => sentBuckets().has(pgLockBucket(0, k))) &&
          JSON.stringify(ourRows()) === JSON.stringify(want)
        );
      });
      // Fewer buckets came than there are: not a full read.
      expect(sentBuckets().size).toBeLessThan(127);
      for (const k of [K1, K2, K3]) {
        const holders = expected.filter(([kk, , w]) => kk === k && !w).map(([, p]) => p);
        const waiters = expected.filter(([kk, , w]) => kk === k && w).map(([, p]) => p);
        if (holders.length + waiters.length === 0) expect(view(k)).toBeUndefined();
        else {
          expect(view(k)!.database!.holders.map((h) => h.session.pid)).toEqual(holders);
          expect(view(k)!.database!.waiters.map((w) => w.session.pid)).toEqual(waiters);
        }
      }
      return held;
    };
    /** A holds K1, B holds K2: the table this test starts from and comes back to. */
    const start: Array<[number, number]> = [
      [K1, pa],
      [K2, pb],
    ];
    await step("an unchanged table", [], start);
    await a.query("SELECT pg_advisory_lock($1)", [K3]);
    await step("a new lock", [K3], [...start, [K3, pa]]);
    await a.query("SELECT pg_advisory_unlock($1)", [K3]);
    await step("a released lock", [K3], start);
    expect(events.filter((e) => e.resource === `${db.name}:${K3}`).map((e) => e.type)).toEqual([
      "acquired",
      "released",
    ]);
    // Between two polls A and B trade keys: the same two keys, the same count, other holders.
    await a.query("SELECT pg_advisory_unlock($1)", [K1]);
    await b.query("SELECT pg_advisory_unlock($1)", [K2]);
    await a.query("SELECT pg_advisory_lock($1)", [K2]);
    await b.query("SELECT pg_advisory_lock($1)", [K1]);
    const before = events.length;
    await step(
      "a holder swap",
      [K1, K2],
      [
        [K1, pb],
        [K2, pa],
      ],
    );
    expect(
      events
        .slice(before)
        .filter((e) => e.resource.startsWith(`${db.name}:`))
        .map((e) => [e.type, e.resource])
        .sort(),
    ).toEqual([
      ["owner-changed", `${db.name}:${K1}`],
      ["owner-changed", `${db.name}:${K2}`],
    ]);
    const cWaits = c.query("SELECT pg_advisory_lock($1)", [K1]);
    await waitUntilWaiting(admin, pc);
    await step(
      "a waiter",
      [K1],
      [
        [K1, pb],
        [K1, pc, " waits"],
        [K2, pa],
      ],
    );
    expect(view(K1)!.database!.waiters[0]).toMatchObject({ blockedBy: [pb], chain: [pc, pb] });
    await b.query("SELECT pg_advisory_unlock($1)", [K1]);
    await cWaits;
  });

  it("a holder moving from key (1,3) to (2,0) is seen at the next poll (a row's hash must not fold the key's halves: 1 xor 3 = 2 xor 0)", async () => {
    const { db, source, events } = await setup();
    const a = await db.session("fold-a");
    const pa = await backendPid(a);
    await a.query("SELECT pg_advisory_lock(1, 3)");
    await pollInto(source, events);
    await pollInto(source, events);
    await a.query("SELECT pg_advisory_unlock(1, 3), pg_advisory_lock(2, 0)");
    const locks = await pollInto(source, events);
    expect(mine(locks, db, "1,3")).toBeUndefined();
    expect(mine(locks, db, "2,0")!.database!.holders.map((h) => h.session.pid)).toEqual([pa]);
  });

  it("the sessions: a known, unchanged session row is left out, and a holder's next statement sends its row again", async () => {
    const { db, port, events } = await setup();
    const raws: Array<{
      sessions: Array<{ pid: number; h: number; query: string | null }>;
      sessionsGone: number[] | null;
    }> = [];
    // The session hashes each poll left out: one slice of the sessions (pid mod 64) is asked for again in turn.
    const asked: Array<number[] | null> = [];
    const spy: PgPort = {
      snapshot: async (maxLocks, queryChars, known, knownSessions, showQueries, buckets, pids) => {
        const raw = await port.snapshot(maxLocks, queryChars, known, knownSessions, showQueries, buckets, pids);
        raws.push(raw as (typeof raws)[number]);
        asked.push(knownSessions ?? null);
        return raw;
      },
      sessionLocks: (pid) => port.sessionLocks(pid),
      terminate: (pid, start, waitMs) => port.terminate(pid, start, waitMs),
      close: () => port.close(),
    };
    const source = new PostgresSource(spy, {
      sourceId: "postgresql://127.0.0.1:5432",
      agentId: "test-agent",
      newId: randomUUID,
      log: () => undefined,
      settings: settings(),
    });
    const a = await db.session("rows-a");
    const b = await db.session("rows-b");
    const [pa, pb] = [await backendPid(a), await backendPid(b)];
    await a.query("SELECT pg_advisory_lock(3001)");
    await b.query("SELECT pg_advisory_lock(3002)");
    // A backend reports itself idle after the client has its answer: a poll in between sees it active, and the next
    // one sees a new state (its row sent again). Both settled first.
    const observer = await db.session("observer");
    const idle = (pids: number[]) =>
      waitFor("the sessions reported idle", async () => {
        const { rows } = await observer.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1) AND state = 'idle'",
          [pids],
        );
        return rows[0]!.n === pids.length;
      });
    await idle([pa, pb]);
    await pollInto(source, events);
    const sent = (pid: number) => raws.at(-1)!.sessions.some((s) => s.pid === pid);
    const first = (pid: number) => raws[0]!.sessions.find((s) => s.pid === pid)!;
    // Sent again though unchanged: its slice's turn, so the agent did not send its hash (1 poll in 64 per session).
    const reasked = (pid: number) => !asked.at(-1)!.includes(first(pid).h);
    expect(raws[0]!.sessions.map((s) => s.pid)).toEqual(expect.arrayContaining([pa, pb]));
    await pollInto(source, events);
    expect([sent(pa), sent(pb)]).toEqual([reasked(pa), reasked(pb)]);
    expect(raws.at(-1)!.sessionsGone).toEqual([]);
    // Idle, outside a transaction, SHOW_QUERIES off: the query text is not sent (nothing needs it).
    expect([first(pa).query, first(pb).query]).toEqual([null, null]);
    const before = mine(source.locks(), db, "3001")!.database!.holders[0]!.session;
    expect(mine(source.locks(), db, "3002")!.database!.holders[0]!.session).toMatchObject({
      pid: pb,
      application: "rows-b",
    });

    await a.query("SELECT 1");
    await idle([pa]);
    const locks = await pollInto(source, events);
    expect([sent(pa), sent(pb)]).toEqual([true, reasked(pb)]);
    // pa's old row is gone (a new statement): the server says so, and its new row came.
    expect(raws.at(-1)!.sessionsGone).toEqual(reasked(pa) ? [] : [first(pa).h]);
    const after = mine(locks, db, "3001")!.database!.holders[0]!.session;
    expect(after).toMatchObject({ pid: pa, application: "rows-a", state: "idle" });
    expect(Date.parse(after.queryStart!)).toBeGreaterThan(Date.parse(before.queryStart!));
    expect(mine(locks, db, "3002")!.database!.holders[0]!.session).toMatchObject({ pid: pb, application: "rows-b" });
  });

  it("the poll is one prepared statement on a generic plan from its first run, prepared again on a new connection", async () => {
    const s = settings();
    const db = await createPgDatabase("lockscope_pglocks");
    cleanups.push(() => db.drop());
    const a = await db.session("plan-a");
    await a.query("SELECT pg_advisory_lock(5101)");
    // The agent's session as NodePgPort opens it, running the poll as NodePgPort does, three polls in a row: a full
    // read, then unchanged, then after a change, each asking as the source asks.
    const agent = new pg.Client({ connectionString: PG_ADMIN_URL, options: pgSessionOptions(s.statementTimeoutMs) });
    await agent.connect();
    cleanups.push(() => agent.end());
    let known: KnownPgLocks | null = null;
    for (let i = 0; i < 3; i++) {
      if (i === 2) await a.query("SELECT pg_advisory_lock(5102)");
      const ask = pgPollAsk(known, i);
      const values = [
        s.maxLocks,
        s.queryChars,
        ask.signature,
        ask.sessionHashes,
        false,
        ask.bucketSignatures,
        ask.sessionPids,
      ];
      const raw = (await agent.query<{ snapshot: unknown }>(pgPollQuery(values))).rows[0]!.snapshot;
      const snap = parsePgSnapshot(raw, known, ask, s.maxLocks);
      known = {
        signature: snap.signature,
        buckets: snap.buckets,
        sessions: new Map(snap.sessions.map((x) => [x.pid, x])),
      };
    }
    const keys = known!.buckets.flatMap((b) => b.rows.filter((r) => r.db === db.name).map((r) => r.objid));
    expect(keys.sort()).toEqual([5101, 5102]);
    // Planned once, on a generic plan, and never again (the CPU saved: parsing and planning at every poll).
    const prepared = await agent.query<{ generic_plans: string; custom_plans: string }>(
      "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1",
      [PG_POLL_STATEMENT],
    );
    expect(prepared.rows.map((r) => [Number(r.generic_plans), Number(r.custom_plans)])).toEqual([[3, 0]]);

    // NodePgPort on the test's database, so that its session is the one lockscope-agent session there: cut it, and
    // the next polls must prepare the statement again on the new connection (the old one's is gone with it).
    const port = new NodePgPort({ url: db.url, statementTimeoutMs: s.statementTimeoutMs, connectTimeoutMs: 2000 });
    cleanups.push(() => port.close());
    const source = sourceOn(port, s);
    const events: LockEvent[] = [];
    expect(mine(await pollInto(source, events), db, "5101")).toBeDefined();
    const admin = await db.session("observer");
    const cut = await admin.query(
      "SELECT pg_terminate_backend(pid, 2000) AS ended FROM pg_stat_activity WHERE datname = $1 AND application_name = 'lockscope-agent'",
      [db.name],
    );
    expect(cut.rows).toEqual([{ ended: true }]);
    await a.query("SELECT pg_advisory_unlock(5101)");
    // The first poll may still meet the dead connection (a failed poll); a later one runs on a new connection.
    await waitFor("a poll on a new connection", async () => {
      const locks = await pollInto(source, events);
      return source.status().up && mine(locks, db, "5101") === undefined;
    });
    expect(mine(source.locks(), db, "5102")!.database!.holders.map((h) => h.session.application)).toEqual(["plan-a"]);
  });

  it("follows a chain through a session that waits for a table lock, not an advisory one, to the root", async () => {
    const { db, source, events } = await setup();
    const root = await db.session("root-ddl");
    const mid = await db.session("mid-worker");
    const tail = await db.session("tail-worker");
    const admin = await db.session("observer");
    const [pr, pm, pt] = [await backendPid(root), await backendPid(mid), await backendPid(tail)];
    await root.query("CREATE TABLE jobs (id int)");
    await root.query("BEGIN");
    await root.query("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE");
    await mid.query("SELECT pg_advisory_lock(2001)");
    const midWaits = mid.query("SELECT count(*) FROM jobs");
    await waitUntilWaiting(admin, pm);
    const tailWaits = tail.query("SELECT pg_advisory_lock(2001)");
    await waitUntilWaiting(admin, pt);
    const lock = mine(await pollInto(source, events), db, "2001")!;
    expect(lock.database!.waiters[0]).toMatchObject({ blockedBy: [pm], chain: [pt, pm, pr] });
    await root.query("COMMIT");
    await midWaits;
    await mid.query("SELECT pg_advisory_unlock(2001)");
    await tailWaits;
  });

  it("a transaction-level lock is released at commit, and its holder idle in transaction is flagged meanwhile", async () => {
    const { db, source, events } = await setup(settings({ idleInTransactionMs: 1000 }));
    const t = await db.session("xact-holder");
    await t.query("BEGIN");
    await t.query("SELECT pg_advisory_xact_lock(7, 8)");
    let lock: Lock | undefined;
    await waitFor("idle-in-transaction hazard", async () => {
      lock = mine(await pollInto(source, events), db, "7,8");
      return lock?.hazards.some((h) => h.code === "db-idle-in-transaction") ?? false;
    });
    expect(lock!.database!.keyKind).toBe("int4-pair");
    expect(lock!.holder).toMatchObject({ level: "transaction", state: "idle in transaction" });
    await t.query("COMMIT");
    await pollInto(source, events);
    expect(mine(source.locks(), db, "7,8")).toBeUndefined();
    expect(events.filter((e) => e.resource === `${db.name}:7,8`).map((e) => e.type)).toEqual(["acquired", "released"]);
  });

  it("flags a session-level lock on a long-idle session as leaked, decodes bigint keys, and shows shared holders", async () => {
    const { db, source, events } = await setup(settings({ idleHolderMs: 1000 }));
    const s1 = await db.session("leaker");
    const s2 = await db.session("sharer");
    await s1.query("SELECT pg_advisory_lock(-5), pg_advisory_lock(9223372036854775807), pg_advisory_lock_shared(55)");
    await s2.query("SELECT pg_advisory_lock_shared(55)");
    let locks: Lock[] = [];
    await waitFor("leaked-lock hazard", async () => {
      locks = await pollInto(source, events);
      return mine(locks, db, "-5")?.hazards.some((h) => h.code === "db-leaked-lock") ?? false;
    });
    expect(mine(locks, db, "9223372036854775807")).toBeDefined();
    const shared = mine(locks, db, "55")!;
    expect(shared.kind).toBe("advisory shared");
    expect(shared.database!.holders).toHaveLength(2);
    const refused = await source.release(release(shared, false));
    expect(refused.result.outcome).toBe("refused");
  });

  it("the release guard never ends a session whose backend start differs (a reused pid)", async () => {
    const { db, source, port, events } = await setup();
    const s = await db.session("victim");
    const admin = await db.session("observer");
    const pid = await backendPid(s);
    await s.query("SELECT pg_advisory_lock(4242)");
    const lock = mine(await pollInto(source, events), db, "4242")!;
    const start = lock.database!.holders[0]!.session.backendStart!;
    // The same pid with another start time: what a reused pid looks like to the guard.
    const other = new Date(Date.parse(start) - 60_000).toISOString();
    expect(await port.terminate(pid, other, 500)).toEqual({ matched: false, terminated: false });
    const viaSource = await source.release(release(lock, false, `pid ${pid}@${other}`));
    expect(viaSource.result.outcome).toBe("refused-owner-changed");
    expect((await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid])).rows).toHaveLength(1);
    expect((await s.query("SELECT 1 AS alive")).rows).toEqual([{ alive: 1 }]);
  });

  it("escapes a hostile database name and the query text SHOW_QUERIES=on shows", async () => {
    const hostile = `lockscope_pg_"q'\u202e_${randomUUID().slice(0, 8)}`;
    const { db, source, events } = await setup(settings({}, true), hostile);
    const s = await db.session("hostile-app");
    await s.query("SELECT pg_advisory_lock(77) /* \u0001 secret */");
    const lock = (await pollInto(source, events)).find((l) => l.database?.database?.includes("lockscope_pg_"))!;
    expect(lock.resource).toContain("\\u{202e}");
    expect(lock.resource).not.toContain("\u202e");
    expect(String(lock.holder!.query)).toContain("\\x01 secret");
  });
});
