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
import { decodeAdvisoryKey, parsePgSnapshot, type PgSessionRow } from "../../agent/sources/postgres/pg-snapshot";

// In PG_POLL_SQL's shape (see the sample pasted in pg-snapshot.ts), with pids renumbered and so a made-up signature:
// A (pid 100) holds 1001 and is idle; B (pid 200) holds 1002 and waits for 1001; C (pid 300) waits for 1002.
const SAMPLE = {
  now: "2026-12-01T10:00:00.000000+00:00",
  total: 4,
  signature: "4:-3326104526451937023",
  changed: true,
  locks: [
    {
      database: 16384,
      objsubid: 1,
      shared: false,
      granted: true,
      classid: null,
      objid: [1001, 1002],
      pid: [100, 200],
      waitstart: null,
    },
    {
      database: 16384,
      objsubid: 1,
      shared: false,
      granted: false,
      classid: null,
      objid: [1001, 1002],
      pid: [200, 300],
      waitstart: ["2026-12-01T09:59:00.000000+00:00", "2026-12-01T09:59:50.000000+00:00"],
    },
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
  it("accepts the sample and spreads its groups into rows (classid 0 and a holder's null waitstart filled in)", () => {
    const snap = parsePgSnapshot(SAMPLE);
    expect(snap.locks).toHaveLength(4);
    expect(snap.locks[1]).toMatchObject({ classid: 0, objid: 1002, pid: 200, granted: true, waitstart: null });
    expect(snap.locks[2]).toEqual({
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
  it("reads a server without advisory locks (no groups)", () => {
    expect(parsePgSnapshot({ ...SAMPLE, locks: [], databases: [] }).locks).toEqual([]);
  });
  it("keeps the known rows when the server left them out for the same signature, and refuses any other", () => {
    const first = parsePgSnapshot(SAMPLE);
    expect(first.reused).toBe(false);
    const same = { ...SAMPLE, changed: false, locks: null, databases: null };
    const again = parsePgSnapshot(same, { signature: SAMPLE.signature, locks: first.locks });
    expect(again).toMatchObject({ reused: true, total: 4 });
    expect(again.locks).toBe(first.locks);
    expect(() => parsePgSnapshot(same, { signature: "4:1", locks: first.locks })).toThrow("not the known one");
    expect(() => parsePgSnapshot(same, null)).toThrow("not the known one");
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
    const later = { ...snap, now: "2026-12-01T10:00:25.000000+00:00", reused: true };
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

  it("keeps the first sighting across polls and forgets holdings that are gone", () => {
    const next = buildPgModel(parsePgSnapshot(SAMPLE), ctx({ firstSeen: model.firstSeen }));
    expect([...next.firstSeen.entries()]).toEqual([...model.firstSeen.entries()]);
    const empty = buildPgModel(
      parsePgSnapshot({ ...SAMPLE, locks: [], databases: [], total: 0, signature: "0:0" }),
      ctx({ firstSeen: model.firstSeen }),
    );
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
