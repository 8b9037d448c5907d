import { describe, expect, it } from "vitest";
import type { ReleaseCommand } from "../../lib/contract/release";
import { DEFAULT_DB_THRESHOLDS } from "../../agent/sources/db-lock-settings";
import { loadPostgresConfig } from "../../agent/sources/postgres/pg-config";
import {
  blockingChain,
  buildPgModel,
  holdingLevel,
  parsePgOwner,
  pgOwner,
  type PgModelContext,
} from "../../agent/sources/postgres/pg-locks-model";
import { planPgRelease } from "../../agent/sources/postgres/pg-release";
import {
  decodeAdvisoryKey,
  parsePgSnapshot,
  pgPollAsk,
  type KnownPgLocks,
  type PgPollAsk,
  type PgSessionRow,
  type PgSnapshot,
} from "../../agent/sources/postgres/pg-snapshot";
import { pgAnswer, type FakePgServer } from "../harness/pg-answer";

// The server's answer to a first poll (pgAnswer answers as PG_POLL_SQL does; its row hashes are its own):
// A (pid 100) holds 1001 and is idle; B (pid 200) holds 1002 and waits for 1001; C (pid 300) waits for 1002.
// 1001 and 1002 are in buckets 112 and 113 (key mod 127).
const STATE: FakePgServer = {
  now: "2026-12-01T10:00:00.000000+00:00",
  rows: [
    { database: 16384, objid: 1001, pid: 100 },
    { database: 16384, objid: 1002, pid: 200 },
    { database: 16384, objid: 1001, pid: 200, granted: false, waitstart: "2026-12-01T09:59:00.000000+00:00" },
    { database: 16384, objid: 1002, pid: 300, granted: false, waitstart: "2026-12-01T09:59:50.000000+00:00" },
  ],
  databases: [[16384, "app"]],
  blocking: [
    { pid: 200, by: [100] },
    { pid: 300, by: [200] },
  ],
  sessions: [
    session(100, { state: "idle", xactStart: null, stateChange: "2026-12-01T09:40:00+00:00", application: "migrator" }),
    session(200, { state: "active", xactStart: "2026-12-01T09:59:00+00:00", query: "SELECT pg_advisory_lock(1001)" }),
    session(300, { state: "active", xactStart: "2026-12-01T09:59:50+00:00", query: "SELECT pg_advisory_lock(1002)" }),
  ],
};
interface Answer {
  total: number;
  signature: string;
  buckets: Array<[number, string]>;
  locks: Array<Record<string, unknown> & { objid: number[]; pid: number[] }>;
  blocking: Array<{ pid: number; by: number[] | null }>;
  sessions: PgSessionRow[];
}
const answer = (state: FakePgServer, ask: PgPollAsk | null = null) => pgAnswer(state, ask) as Answer;
const SAMPLE = answer(STATE);
const EMPTY = answer({ ...STATE, rows: [], blocking: [] });
const knownOf = (snap: PgSnapshot): KnownPgLocks => ({
  signature: snap.signature,
  buckets: snap.buckets,
  sessions: new Map(snap.sessions.map((x) => [x.pid, x])),
});

function session(pid: number, over: Partial<PgSessionRow>): PgSessionRow {
  return {
    pid,
    backendStart: "2026-12-01T09:00:00.123456+00:00",
    user: "app",
    application: "",
    clientAddr: "127.0.0.1",
    clientPort: 40000 + pid,
    db: "app",
    state: "idle",
    xactStart: null,
    queryStart: "2026-12-01T09:39:59+00:00",
    stateChange: "2026-12-01T09:40:00+00:00",
    query: "SELECT 1",
    ...over,
  };
}

function ctx(over: Partial<PgModelContext> = {}): PgModelContext {
  return {
    sourceId: "postgresql://db1:5432",
    agentId: "a1",
    showQueries: false,
    queryChars: 200,
    thresholds: DEFAULT_DB_THRESHOLDS,
    firstSeen: new Map(),
    observedAtMs: Date.parse("2026-12-01T10:00:00.050Z"),
    ...over,
  };
}

describe("decodeAdvisoryKey", () => {
  it.each([
    [0, 42, 1, "bigint", "42"],
    [4294967295, 4294967291, 1, "bigint", "-5"],
    [2147483647, 4294967295, 1, "bigint", "9223372036854775807"],
    [2147483648, 0, 1, "bigint", "-9223372036854775808"],
    [1, 2, 2, "int4-pair", "1,2"],
    [4294967295, 2147483648, 2, "int4-pair", "-1,-2147483648"],
  ])("classid %d objid %d objsubid %d -> %s %s", (classid, objid, sub, kind, text) => {
    expect(decodeAdvisoryKey(classid, objid, sub)).toEqual({ kind, text });
  });
});

describe("parsePgSnapshot", () => {
  it("accepts a full answer and spreads its groups into rows, bucket by bucket (classid 0 and a holder's null waitstart filled in)", () => {
    const snap = parsePgSnapshot(SAMPLE);
    expect(snap.locks).toHaveLength(4);
    expect(snap.bucketsSent).toBe(127);
    expect(snap.buckets[112]!.rows.map((r) => [r.objid, r.pid])).toEqual([
      [1001, 100],
      [1001, 200],
    ]);
    expect(snap.locks[0]).toMatchObject({ classid: 0, objid: 1001, pid: 100, granted: true, waitstart: null });
    expect(snap.locks[1]).toEqual({
      db: "app",
      classid: 0,
      objid: 1001,
      objsubid: 1,
      mode: "ExclusiveLock",
      granted: false,
      pid: 200,
      waitstart: "2026-12-01T09:59:00.000000+00:00",
    });
  });
  it("reads a server without advisory locks (every bucket sent, none with rows)", () => {
    expect(parsePgSnapshot(EMPTY).locks).toEqual([]);
  });

  it("keeps the buckets not sent (the very objects) and replaces those sent; a bucket sent without rows has no locks left", () => {
    const first = parsePgSnapshot(SAMPLE);
    const known = knownOf(first);
    // C stops waiting for 1002: only bucket 113 changes.
    const next = { ...STATE, rows: STATE.rows.slice(0, 3) };
    const again = parsePgSnapshot(answer(next, pgPollAsk(known)), known);
    expect(again.bucketsSent).toBe(1);
    expect(again.buckets[112]).toBe(first.buckets[112]);
    expect(again.buckets[113]!.rows.map((r) => r.pid)).toEqual([200]);
    expect(again.locks).toHaveLength(3);
    // Then 1002 is released too: bucket 113 comes with no rows.
    const k2 = knownOf(again);
    const gone = parsePgSnapshot(answer({ ...STATE, rows: [STATE.rows[0]!, STATE.rows[2]!] }, pgPollAsk(k2)), k2);
    expect(gone.buckets[113]).toEqual({ signature: "0:0", rows: [] });
    expect(gone.locks.map((r) => r.objid)).toEqual([1001, 1001]);
    // Unchanged: nothing sent, every bucket kept; with a slot, that bucket is sent again (the same rows, new objects).
    const k3 = knownOf(gone);
    const same = parsePgSnapshot(answer({ ...STATE, rows: [STATE.rows[0]!, STATE.rows[2]!] }, pgPollAsk(k3)), k3);
    expect(same.bucketsSent).toBe(0);
    expect(same.buckets).toEqual(gone.buckets);
    expect(same.buckets.every((b, i) => b === gone.buckets[i])).toBe(true);
    const refreshed = parsePgSnapshot(
      answer({ ...STATE, rows: [STATE.rows[0]!, STATE.rows[2]!] }, pgPollAsk(k3, 112)),
      k3,
      pgPollAsk(k3, 112),
    );
    expect(refreshed.bucketsSent).toBe(1);
    expect(refreshed.buckets[112]).not.toBe(gone.buckets[112]);
    expect(refreshed.buckets[112]).toEqual(gone.buckets[112]);
  });

  // Answers to the known SAMPLE's ask after C stopped waiting (bucket 113 sent), spoilt one way each.
  const known = knownOf(parsePgSnapshot(SAMPLE));
  const ask = pgPollAsk(known);
  const good = answer({ ...STATE, rows: STATE.rows.slice(0, 3) }, ask);
  it.each([
    ["a bucket out of range", { ...good, buckets: [[127, "0:0"]] }, "buckets.0.0"],
    ["a malformed signature", { ...good, buckets: [[113, "1-2"]] }, "not a count:xor signature"],
    ["a bucket sent twice", { ...good, buckets: [...good.buckets, ...good.buckets] }, "bucket 113 sent twice"],
    [
      "a row of a bucket not sent",
      { ...good, locks: [{ ...good.locks[0]!, objid: [1001], pid: [100] }] },
      "a row of bucket 112, which was not sent",
    ],
    ["counts that do not add up", { ...good, total: 4 }, "the buckets count 3 rows, not the total 4"],
    [
      "more rows than the bucket's count",
      { ...good, locks: [{ ...good.locks[0]!, objid: [1002, 1002], pid: [200, 300] }] },
      "2 rows, but its signature counts 1",
    ],
    ["rows missing though the LIMIT did not cut", { ...good, locks: [] }, "fewer than DB_MAX_LOCKS"],
    [
      "a bucket sent though the table's signature is the agent's",
      { ...good, signature: known.signature },
      "bucket 113 sent, but the signature is the agent's",
    ],
    [
      "a bucket sent with the agent's own signature",
      { ...good, buckets: [[112, known.buckets[112]!.signature]] },
      "bucket 112 sent with the signature the agent has",
    ],
  ])("refuses %s", (_name, input, message) => {
    expect(parsePgSnapshot(good, known, ask).locks).toHaveLength(3);
    expect(() => parsePgSnapshot(input, known, ask)).toThrow(message);
  });
  it("refuses buckets left out of an answer to a first poll, which asked for all of them", () => {
    expect(() => parsePgSnapshot({ ...SAMPLE, buckets: SAMPLE.buckets.slice(1) })).toThrow(
      "bucket 0 was asked for but not sent",
    );
  });
  it("uses a known session row only if its hash was sent: a session left out of the ask in turn comes again or has no row", () => {
    const snap = parsePgSnapshot(SAMPLE);
    const k = knownOf(snap);
    // Slot 36: pid 100 (100 mod 64 = 36) is left out of the ask; the others are sent.
    const slotted = pgPollAsk(k, 36);
    expect(slotted.sessionHashes).toEqual(SAMPLE.sessions.filter((x) => x.pid !== 100).map((x) => x.h));
    const next = parsePgSnapshot(answer(STATE, slotted), k, slotted);
    expect(next.sessions.find((x) => x.pid === 100)).toEqual(SAMPLE.sessions.find((x) => x.pid === 100));
    expect(next.sessions.find((x) => x.pid === 100)).not.toBe(k.sessions!.get(100));
    // Had the server not sent it (the session ended meanwhile), the old row is not taken for it.
    const ended = { ...answer(STATE, slotted), sessions: [] };
    expect(
      parsePgSnapshot(ended, k, slotted)
        .sessions.map((x) => x.pid)
        .sort(),
    ).toEqual([200, 300]);
  });
  it.each([
    [null, "(root)"],
    [{ ...SAMPLE, locks: [{ ...SAMPLE.locks[0]!, classid: [-1, 0] }] }, "locks.0.classid.0"],
    [{ ...SAMPLE, locks: [SAMPLE.locks[0]!, { ...SAMPLE.locks[1]!, pid: [100] }] }, "locks.1.pid: 1 values, not 2"],
    [{ ...SAMPLE, locks: [{ ...SAMPLE.locks[1]!, waitstart: [null] }] }, "locks.0.waitstart: 1 values, not 2"],
    [{ ...SAMPLE, sessions: "x" }, "sessions"],
  ])("names the bad field of %j", (input, where) => {
    expect(() => parsePgSnapshot(input)).toThrow(where);
  });
});

describe("buildPgModel", () => {
  const model = buildPgModel(parsePgSnapshot(SAMPLE), ctx());
  const byKey = (k: string) => model.locks.find((l) => l.resource === `app:${k}`)!;

  it("makes one lock per key with its holder, waiters and chains to the root blocker", () => {
    expect(model.locks).toHaveLength(2);
    const k2 = byKey("1002");
    expect(k2.owner).toBe("pid 200@2026-12-01T09:00:00.123456+00:00");
    expect(k2.database!.waiters[0]).toMatchObject({ blockedBy: [200], chain: [300, 200, 100] });
    expect(k2.waiters[0]).toMatchObject({ owner: "pid 300", since: "2026-12-01T09:59:50.000Z" });
    expect(byKey("1001").holder).toMatchObject({ pid: 100, application: "migrator", level: "session" });
    expect(model.heldByPid.get(100)).toEqual(["app:1001"]);
  });

  it("states the evidence of each hazard: leaked, long wait, held too long (from the idle time, server clock)", () => {
    const k1 = byKey("1001");
    const codes = k1.hazards.map((h) => h.code);
    expect(codes).toEqual(["db-leaked-lock", "db-long-wait", "held-too-long"]);
    expect(k1.hazards[0]!.message).toContain("run nothing for 20 min");
    expect(k1.hazards[1]!.message).toMatch(/pid 200 .*waited 60 s/);
    expect(k1.hazards[2]!.message).toContain("Held at least 20 min");
    // C has waited 10 s: under the 30 s threshold.
    expect(byKey("1002").hazards.map((h) => h.code)).not.toContain("db-long-wait");
  });

  it("raises nothing under the thresholds", () => {
    const calm = buildPgModel(
      parsePgSnapshot(SAMPLE),
      ctx({ thresholds: { idleInTransactionMs: 1e9, idleHolderMs: 1e9, longWaitMs: 1e9, maxHoldMs: 0 } }),
    );
    expect(calm.locks.flatMap((l) => l.hazards)).toEqual([]);
  });

  it("flags idle in transaction, and keeps query text out unless asked", () => {
    const snap = parsePgSnapshot({
      ...SAMPLE,
      sessions: [
        session(100, {
          state: "idle in transaction",
          xactStart: "2026-12-01T09:50:00+00:00",
          query: "UPDATE t SET x = 1",
        }),
        ...SAMPLE.sessions.slice(1),
      ],
    });
    const m = buildPgModel(snap, ctx());
    const k1 = m.locks.find((l) => l.resource === "app:1001")!;
    expect(k1.hazards.map((h) => h.code)).toContain("db-idle-in-transaction");
    expect(k1.holder!.query).toBeUndefined();
    const shown = buildPgModel(snap, ctx({ showQueries: true, queryChars: 8 }));
    expect(shown.locks.find((l) => l.resource === "app:1001")!.holder!.query).toBe("UPDATE t…(+10 bytes)");
  });

  it("with the same rows, reuses each lock whose sessions and blocking are the same, and redoes its hazards from the time", () => {
    const snap = parsePgSnapshot(SAMPLE);
    const first = buildPgModel(snap, ctx());
    const k1002 = (m: typeof first) => m.locks.find((l) => l.resource === "app:1002")!;
    const k1001 = (m: typeof first) => m.locks.find((l) => l.resource === "app:1001")!;
    // 25 s later by the server's clock, the rows unchanged (the very rows, as parsePgSnapshot hands them back): C has
    // now waited 35 s, past the 30 s threshold, so 1002's hazards change though nothing was rebuilt.
    const later = { ...snap, now: "2026-12-01T10:00:25.000000+00:00" };
    const again = buildPgModel(
      later,
      ctx({ firstSeen: first.firstSeen, memo: first.memo, observedAtMs: Date.parse("2026-12-01T10:00:25.050Z") }),
    );
    expect(k1002(again).database).toBe(k1002(first).database);
    expect(k1001(again).database).toBe(k1001(first).database);
    expect(k1002(first).hazards.map((h) => h.code)).not.toContain("db-long-wait");
    expect(k1002(again).hazards.find((h) => h.code === "db-long-wait")?.message).toMatch(/pid 300 .*waited 35 s/);
    expect(k1002(again).observedAt).toBe("2026-12-01T10:00:25.050Z");
    expect([...again.firstSeen.entries()]).toEqual([...first.firstSeen.entries()]);
    expect(again.heldByPid).toEqual(first.heldByPid);
    // B (pid 200) ran a statement: its row is a new one, so the locks it holds or awaits are built again (1001's
    // waiter, 1002's holder); a new blocker of C rebuilds 1002 too. The rest stays as built.
    const b2 = session(200, { state: "idle in transaction", xactStart: "2026-12-01T09:59:00+00:00" });
    const changed = buildPgModel(
      { ...later, sessions: [snap.sessions[0]!, b2, snap.sessions[2]!] },
      ctx({ firstSeen: first.firstSeen, memo: again.memo }),
    );
    expect(k1002(changed).database).not.toBe(k1002(first).database);
    expect(k1002(changed).database!.holders[0]!.session.state).toBe("idle in transaction");
    expect(k1001(changed).database!.waiters[0]!.session.state).toBe("idle in transaction");
    const reblocked = buildPgModel(
      { ...later, blocking: [SAMPLE.blocking[0]!, { pid: 300, by: [200, 100] }] },
      ctx({ firstSeen: first.firstSeen, memo: again.memo }),
    );
    expect(k1001(reblocked).database).toBe(k1001(first).database);
    expect(k1002(reblocked).database!.waiters[0]!.blockedBy).toEqual([200, 100]);
    // Other rows (a new array, even with equal content) are never matched against the memo.
    const fresh = buildPgModel(parsePgSnapshot(SAMPLE), ctx({ firstSeen: first.firstSeen, memo: first.memo }));
    expect(k1001(fresh).database).not.toBe(k1001(first).database);
  });

  it("after a change in one bucket, reuses the locks of the buckets not sent and builds only the changed bucket's", () => {
    const snap = parsePgSnapshot(SAMPLE);
    const first = buildPgModel(snap, ctx());
    const known = knownOf(snap);
    // C stops waiting for 1002 (bucket 113); 1001 (bucket 112) is unchanged and not sent.
    const next = parsePgSnapshot(answer({ ...STATE, rows: STATE.rows.slice(0, 3) }, pgPollAsk(known)), known);
    const m = buildPgModel(next, ctx({ firstSeen: first.firstSeen, memo: first.memo }));
    const k = (mm: typeof m, key: string) => mm.locks.find((l) => l.resource === `app:${key}`)!;
    expect(k(m, "1001").database).toBe(k(first, "1001").database);
    expect(k(m, "1002").database).not.toBe(k(first, "1002").database);
    expect(k(m, "1002").waiters).toEqual([]);
    expect(k(m, "1002").owner).toBe(k(first, "1002").owner);
  });

  it("keeps the first sighting across polls and forgets holdings that are gone", () => {
    const next = buildPgModel(parsePgSnapshot(SAMPLE), ctx({ firstSeen: model.firstSeen }));
    expect([...next.firstSeen.entries()]).toEqual([...model.firstSeen.entries()]);
    const empty = buildPgModel(parsePgSnapshot(EMPTY), ctx({ firstSeen: model.firstSeen }));
    expect(empty.firstSeen.size).toBe(0);
  });
});

describe("holdingLevel", () => {
  const key = { kind: "bigint" as const, text: "77" };
  it.each([
    ["no transaction open", session(1, { xactStart: null }), 0, "session"],
    [
      "held before the transaction began",
      session(1, { xactStart: "2026-12-01T10:00:00Z" }),
      Date.parse("2026-12-01T09:00:00Z"),
      "session",
    ],
    [
      "the last statement took it with pg_advisory_xact_lock",
      session(1, { xactStart: "2026-12-01T09:00:00Z", query: "select pg_advisory_xact_lock( 77 )" }),
      Date.parse("2026-12-01T10:00:00Z"),
      "transaction",
    ],
    [
      "another key's xact lock",
      session(1, { xactStart: "2026-12-01T09:00:00Z", query: "select pg_advisory_xact_lock(770)" }),
      Date.parse("2026-12-01T10:00:00Z"),
      "unknown",
    ],
    [
      "inside a transaction, nothing more known",
      session(1, { xactStart: "2026-12-01T09:00:00Z" }),
      Date.parse("2026-12-01T10:00:00Z"),
      "unknown",
    ],
  ])("%s", (_name, s, seen, level) => {
    expect(holdingLevel(s, key, seen).level).toBe(level);
  });
  it("is unknown without the session row", () => {
    expect(holdingLevel(undefined, key, 0).level).toBe("unknown");
  });
});

describe("blockingChain", () => {
  it("follows the first blocker to the root and stops at a cycle", () => {
    expect(
      blockingChain(
        3,
        new Map([
          [3, [2]],
          [2, [1, 9]],
        ]),
      ),
    ).toEqual([3, 2, 1]);
    expect(
      blockingChain(
        1,
        new Map([
          [1, [2]],
          [2, [1]],
        ]),
      ),
    ).toEqual([1, 2]);
    expect(blockingChain(5, new Map())).toEqual([5]);
  });
});

describe("owners and the release plan", () => {
  it("round-trips an owner and rejects anything else", () => {
    const o = pgOwner(42, "2026-12-01T09:00:00.123456+00:00");
    expect(parsePgOwner(o)).toEqual({ pid: 42, backendStart: "2026-12-01T09:00:00.123456+00:00" });
    expect(parsePgOwner("pid 42@unknown")).toBeNull();
    expect(parsePgOwner("pid 42@2026-12-01T09:00:00Z'; DROP TABLE x")).toBeNull();
  });

  const model = buildPgModel(parsePgSnapshot(SAMPLE), ctx());
  const lock = { ...model.locks.find((l) => l.resource === "app:1001")!, since: "2026-12-01T10:00:00Z" };
  const cmd = (over: Partial<ReleaseCommand> = {}): ReleaseCommand => ({
    requestId: "r",
    lockId: lock.id,
    expectedOwner: lock.owner!,
    dryRun: true,
    actor: "t",
    reason: "stuck",
    ...over,
  });
  const rctx = {
    heldByPid: new Map([[100, ["app:1001", "app:2002"]]]),
    sessionLocks: [{ locktype: "advisory", mode: "ExclusiveLock", count: 2 }],
    nowMs: Date.parse("2026-12-01T10:00:00Z"),
    showQueries: false,
  };

  it("plans one guarded terminate and names the session and its other locks", () => {
    const plan = planPgRelease(lock, cmd(), rctx);
    expect(plan.kind).toBe("terminate");
    if (plan.kind !== "terminate") return;
    expect(plan).toMatchObject({ pid: 100, backendStart: "2026-12-01T09:00:00.123456+00:00" });
    const text = plan.steps.join("\n");
    expect(text).toContain('application "migrator"');
    expect(text).toContain("app:2002");
    expect(text).toContain("2 advisory ExclusiveLock");
    expect(text).toContain("AND backend_start = '2026-12-01T09:00:00.123456+00:00'");
    expect(text).toContain("SHOW_QUERIES=off");
  });

  it.each([
    ["another owner", cmd({ expectedOwner: "pid 100@2026-12-01T08:00:00+00:00" }), "refused-owner-changed"],
    ["a malformed owner", cmd({ expectedOwner: "100" }), "rejected"],
    ["another fingerprint", cmd({ expectedFingerprint: "sha1:00" }), "refused-owner-changed"],
    ["a waiter purge", cmd({ purgeWaiter: "pid 200" }), "refused"],
  ])("refuses %s", (_n, c, outcome) => {
    const plan = planPgRelease(lock, c, rctx);
    expect(plan.kind === "refuse" && plan.result.outcome).toBe(outcome);
  });

  it("has nothing to do for a lock that is gone", () => {
    const plan = planPgRelease(undefined, cmd(), rctx);
    expect(plan.kind === "refuse" && plan.result.outcome).toBe("nothing-to-do");
  });
});

describe("loadPostgresConfig", () => {
  it("is off without POSTGRES_URLS and strips credentials from the source id", () => {
    expect(loadPostgresConfig({})).toBeNull();
    const c = loadPostgresConfig({ POSTGRES_URLS: "postgresql://mon:secret@db1/app,postgres://db2:6543" })!;
    expect(c.targets.map((t) => t.id)).toEqual(["postgresql://db1:5432", "postgresql://db2:6543"]);
    expect(c.settings.showQueries).toBe(false);
  });
  it.each([
    [{ POSTGRES_URLS: "mysql://x" }, /POSTGRES_URLS/],
    [{ POSTGRES_URLS: "postgresql://a/x,postgresql://a:5432/y" }, /listed twice/],
    [{ POSTGRES_URLS: "postgresql://a", DB_LONG_WAIT_MS: "soon" }, /DB_LONG_WAIT_MS/],
    [{ POSTGRES_URLS: "postgresql://a", SHOW_QUERIES: "maybe" }, /SHOW_QUERIES/],
  ])("rejects %j", (env, msg) => {
    expect(() => loadPostgresConfig(env)).toThrow(msg);
  });
});
