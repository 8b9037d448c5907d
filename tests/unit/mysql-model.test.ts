import { describe, expect, it } from "vitest";
import type { ReleaseCommand } from "../../lib/contract/release";
import { DEFAULT_DB_THRESHOLDS } from "../../agent/sources/db-lock-settings";
import { loadMysqlConfig } from "../../agent/sources/mysql/mysql-config";
import {
  buildMysqlModel,
  getLockNameFromStatement,
  mysqlOwner,
  parseMysqlOwner,
  parseMysqlRows,
  type MysqlModelContext,
} from "../../agent/sources/mysql/mysql-locks-model";
import { planMysqlRelease } from "../../agent/sources/mysql/mysql-release";
import { explainMysqlError } from "../../agent/sources/mysql/mysql-source";

const hex = (s: string) => Buffer.from(s).toString("hex").toUpperCase();

// Pasted from MariaDB 10.11 (MARIADB_POLL_SQL): connection 10 holds `job's "lock"`, 11 waits for it.
const MARIADB_ROWS = [
  {
    k: "h",
    id: 10,
    name_hex: "6A6F62277320226C6F636B22",
    user: "root",
    host: "127.0.0.1:57088",
    db: null,
    command: "Sleep",
    time_ms: "700000.457",
    state: "",
    info: null,
  },
  {
    k: "w",
    id: 11,
    name_hex: null,
    user: "app",
    host: "10.0.0.7:40100",
    db: "shop",
    command: "Query",
    time_ms: "45000.462",
    state: "User lock",
    info: "SELECT GET_LOCK('job''s \"lock\"', 60)",
  },
  {
    k: "w",
    id: 12,
    name_hex: null,
    user: "app",
    host: "10.0.0.8:40101",
    db: "shop",
    command: "Execute",
    time_ms: "100",
    state: "User lock",
    info: "SELECT GET_LOCK(?, 60)",
  },
];

// MySQL 8 (MYSQL8_POLL_SQL, unverified here: no MySQL 8 server on this machine), a PENDING row names its lock.
const MYSQL8_ROWS = [
  {
    k: "h",
    id: 21,
    name_hex: hex("leader"),
    user: "svc",
    host: "10.0.0.9",
    db: null,
    command: "Sleep",
    time_ms: 2000,
    state: null,
    info: null,
  },
  {
    k: "w",
    id: 22,
    name_hex: hex("leader"),
    user: "svc",
    host: "10.0.0.10",
    db: null,
    command: "Query",
    time_ms: 1000,
    state: "User lock",
    info: "SELECT GET_LOCK(@n, 5)",
  },
];

function ctx(over: Partial<MysqlModelContext> = {}): MysqlModelContext {
  return {
    sourceId: "mysql://db1:3306",
    agentId: "a1",
    flavour: "mariadb",
    lockTable: "metadata_lock_info",
    showQueries: false,
    queryChars: 200,
    thresholds: DEFAULT_DB_THRESHOLDS,
    observedAtMs: Date.parse("2026-12-01T10:00:00Z"),
    firstSeen: new Map(),
    ...over,
  };
}

describe("getLockNameFromStatement", () => {
  it.each([
    ["SELECT GET_LOCK('a', 10)", "a"],
    ["select get_lock( 'it''s' ,1)", "it's"],
    ["SELECT GET_LOCK('back\\\\slash\\'q', 1)", "back\\slash'q"],
    ["DO GET_LOCK(_utf8mb4'x', 1)", "x"],
    ["SELECT GET_LOCK(?, 10)", null],
    ["SELECT GET_LOCK(@name, 10)", null],
    [null, null],
  ])("%s -> %s", (info, name) => {
    const got = getLockNameFromStatement(info);
    expect(got === null ? null : got.toString("utf8")).toBe(name);
  });
});

describe("parseMysqlRows", () => {
  it("accepts both samples", () => {
    expect(parseMysqlRows(MARIADB_ROWS)[0]!.time_ms).toBeCloseTo(700000.457);
    expect(parseMysqlRows(MYSQL8_ROWS)).toHaveLength(2);
  });
  it.each([
    [[{ ...MARIADB_ROWS[0], k: "x" }], "0.k"],
    [[{ ...MARIADB_ROWS[0], name_hex: "zz" }], "0.name_hex"],
    ["rows", "(root)"],
  ])("names the bad field of %j", (rows, where) => {
    expect(() => parseMysqlRows(rows)).toThrow(where);
  });
});

describe("buildMysqlModel", () => {
  it("MariaDB: matches a waiter to its lock by the statement's literal, counts waiters it cannot name", () => {
    const m = buildMysqlModel(parseMysqlRows(MARIADB_ROWS), ctx());
    expect(m.locks).toHaveLength(1);
    const l = m.locks[0]!;
    expect(l.resource).toBe(`job's "lock"`);
    expect(l.owner).toBe("connection 10 (root@127.0.0.1:57088)");
    expect(l.waiters).toEqual([
      {
        owner: "connection 11",
        since: "2026-12-01T09:59:14.999Z",
        detail: "app@10.0.0.7:40100; lock named by its GET_LOCK statement",
      },
    ]);
    expect(m.unnamedWaiters).toBe(1);
    expect(l.hazards.map((h) => h.code)).toEqual(["db-leaked-lock", "db-long-wait"]);
    expect(l.hazards[0]!.message).toContain("run nothing for 12 min");
    expect(l.hazards[1]!.message).toContain("connection 11 (app@10.0.0.7:40100) has waited 45 s");
    expect(m.names.get(l.id)!.toString()).toBe(`job's "lock"`);
  });

  it("MySQL 8: a PENDING row is a waiter of the lock it names", () => {
    const m = buildMysqlModel(parseMysqlRows(MYSQL8_ROWS), ctx({ flavour: "mysql", lockTable: "performance_schema" }));
    expect(m.locks).toHaveLength(1);
    expect(m.locks[0]!.library).toBe("mysql-get-lock");
    expect(m.locks[0]!.database!.waiters[0]!.blockedBy).toEqual([21]);
    expect(m.locks[0]!.hazards).toEqual([]);
  });

  it("attaches a waiter on a long name to the holder whose name the server cut at 64 characters", () => {
    const full = `${"n".repeat(70)}`;
    const rows = parseMysqlRows([
      { ...MARIADB_ROWS[0], name_hex: hex(full.slice(0, 64)) },
      { ...MARIADB_ROWS[1], info: `SELECT GET_LOCK('${full}', 5)` },
    ]);
    const m = buildMysqlModel(rows, ctx());
    expect(m.locks).toHaveLength(1);
    expect(m.locks[0]!.waiters).toHaveLength(1);
    expect(String(m.locks[0]!.holder!.nameNote)).toContain("may be cut");
  });

  it("escapes hostile names and keeps statement text out unless asked", () => {
    const rows = parseMysqlRows([{ ...MARIADB_ROWS[0], name_hex: "41FF0A", info: "SELECT 'x\u0007'" }]);
    const hidden = buildMysqlModel(rows, ctx());
    expect(hidden.locks[0]!.resource).toBe("A\\xff\\x0a");
    expect(hidden.locks[0]!.holder!.query).toBeUndefined();
    expect(buildMysqlModel(rows, ctx({ showQueries: true })).locks[0]!.holder!.query).toBe("SELECT 'x\\x07'");
  });
});

describe("the MySQL release plan", () => {
  const m = buildMysqlModel(parseMysqlRows(MARIADB_ROWS), ctx());
  const lock = { ...m.locks[0]!, since: "2026-12-01T09:00:00Z" };
  const cmd = (over: Partial<ReleaseCommand> = {}): ReleaseCommand => ({
    requestId: "r",
    lockId: lock.id,
    expectedOwner: lock.owner!,
    dryRun: true,
    actor: "t",
    reason: "stuck",
    ...over,
  });
  const rctx = { heldById: m.heldById, showQueries: false, nowMs: Date.parse("2026-12-01T10:00:00Z") };

  it("plans a checked KILL and says how it is guarded", () => {
    const plan = planMysqlRelease(lock, cmd(), rctx);
    expect(plan).toMatchObject({ kind: "kill", id: 10, user: "root", host: "127.0.0.1:57088" });
    if (plan.kind !== "kill") return;
    expect(plan.steps.join("\n")).toContain("IS_USED_LOCK");
    expect(plan.steps.join("\n")).toContain("KILL CONNECTION 10");
  });

  it.each([
    ["another owner", cmd({ expectedOwner: mysqlOwner(10, "root", "127.0.0.1:1") }), "refused-owner-changed"],
    ["a malformed owner", cmd({ expectedOwner: "10" }), "rejected"],
    ["a waiter purge", cmd({ purgeWaiter: "connection 11" }), "refused"],
  ])("refuses %s", (_n, c, outcome) => {
    const plan = planMysqlRelease(lock, c, rctx);
    expect(plan.kind === "refuse" && plan.result.outcome).toBe(outcome);
  });

  it("round-trips owners", () => {
    expect(parseMysqlOwner(mysqlOwner(7, "u", "h:1"))).toEqual({ id: 7, user: "u", host: "h:1" });
    expect(parseMysqlOwner("connection x (u@h)")).toBeNull();
  });
});

describe("explainMysqlError and loadMysqlConfig", () => {
  it("turns a missing METADATA_LOCK_INFO into what to run", () => {
    const err = Object.assign(new Error("Unknown table 'METADATA_LOCK_INFO' in information_schema"), { errno: 1109 });
    expect(explainMysqlError("mariadb", err)).toContain("INSTALL SONAME 'metadata_lock_info'");
    expect(explainMysqlError("mariadb", new Error("boom"))).toBe("boom");
  });
  it("reads MYSQL_URLS without credentials in the id", () => {
    expect(loadMysqlConfig({})).toBeNull();
    expect(loadMysqlConfig({ MYSQL_URLS: "mysql://mon:pw@db1,mariadb://db2:3307" })!.targets.map((t) => t.id)).toEqual([
      "mysql://db1:3306",
      "mysql://db2:3307",
    ]);
    expect(() => loadMysqlConfig({ MYSQL_URLS: "postgresql://x" })).toThrow(/MYSQL_URLS/);
    expect(() => loadMysqlConfig({ MYSQL_URLS: "mysql://a,mysql://a:3306" })).toThrow(/listed twice/);
  });
});
