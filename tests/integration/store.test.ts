import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AlertView } from "../../lib/contract/alerts";
import type { LockEvent } from "../../lib/contract/lock";
import { testAlert } from "../harness/alert-fixture";
import { migrateDatabase, projectRoot } from "../../lib/server/migrate";
import {
  openStore,
  SQLITE_EVENTS_PER_TRANSACTION,
  SqliteAlerts,
  SqliteIngest,
  type HistoryStore,
} from "../../lib/server/store";
import { createTestDatabase, SHARED_POSTGRES } from "../harness/postgres-server";
import { waitFor } from "../harness/ports";

// One suite, run against each store (like node-redlock's tests): a real SQLite file, and a fresh database on the
// machine's PostgreSQL 15, each migrated the way the dashboard migrates it at start.
interface Setup {
  name: string;
  create(): Promise<{ url: string; cleanup(): Promise<void> }>;
}

const setups: Setup[] = [
  {
    name: "sqlite",
    async create() {
      const dir = mkdtempSync(path.join(tmpdir(), "lockscope-store-"));
      return {
        url: `file:${path.join(dir, "store.db")}`,
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: "postgresql",
    async create() {
      const db = await createTestDatabase();
      return { url: db.url, cleanup: () => db.drop() };
    },
  },
];

const at = "2026-11-29T21:30:12.345Z";
const ev = (id: string, type: LockEvent["type"], lockId = "L1", heldMs?: number): LockEvent => ({
  id,
  agentId: "a",
  type,
  lockId,
  backend: "redis",
  source: "redis://127.0.0.1:1/0",
  resource: `r-${lockId}`,
  owner: "o",
  at,
  ...(heldMs !== undefined ? { detail: { heldMs } } : {}),
});

describe.each(setups)("history store on $name", (setup) => {
  let store: HistoryStore;
  let url: string;
  let cleanup: () => Promise<void>;
  const others: HistoryStore[] = [];

  beforeAll(async () => {
    ({ url, cleanup } = await setup.create());
    await migrateDatabase(url, projectRoot);
    store = openStore(url);
  });

  afterAll(async () => {
    await store?.close();
    for (const o of others) await o.close();
    await cleanup?.();
  });

  it("stores each event once, reports which were new, and rolls them up per lock and hour", async () => {
    const first = await store.saveEvents([ev("e1-xxxxxxxx", "acquired"), ev("e2-xxxxxxxx", "released", "L1", 500)]);
    expect(first.fresh.map((e) => e.id)).toEqual(["e1-xxxxxxxx", "e2-xxxxxxxx"]);
    const second = await store.saveEvents([
      ev("e1-xxxxxxxx", "acquired"),
      ev("e3-xxxxxxxx", "acquired"),
      ev("e4-xxxxxxxx", "expired", "L1", 1500),
    ]);
    expect(second.stored).toEqual(["e1-xxxxxxxx", "e3-xxxxxxxx", "e4-xxxxxxxx"]);
    expect(second.fresh.map((e) => e.id)).toEqual(["e3-xxxxxxxx", "e4-xxxxxxxx"]);
    expect(await store.countEvents()).toBe(4);
    const [row] = await store.hourlyRollups(new Date("2026-11-29T00:00:00Z"));
    expect(row).toMatchObject({
      lockId: "L1",
      acquisitions: 2,
      releases: 1,
      expiries: 1,
      holdCount: 2,
      holdMsSum: 2000,
      holdMsMax: 1500,
    });
    expect(row!.hour.toISOString()).toBe("2026-11-29T21:00:00.000Z");
  });

  it("rolls up a first snapshot of thousands of locks in one go", async () => {
    const many = Array.from({ length: 3000 }, (_, i) => ev(`bulk-${i}-xxxxxxxx`, "acquired", `B${i}`));
    const { fresh } = await store.saveEvents(many);
    expect(fresh).toHaveLength(3000);
    const rows = await store.hourlyRollups(new Date("2026-11-29T00:00:00Z"));
    expect(rows.filter((r) => r.lockId.startsWith("B"))).toHaveLength(3000);
  });

  it("prunes old raw events in batches and keeps the rollups", async () => {
    const removed = await store.pruneEvents(new Date("2026-11-30T00:00:00Z"), 500);
    expect(removed).toBe(500);
    while ((await store.pruneEvents(new Date("2026-11-30T00:00:00Z"), 500)) > 0);
    expect(await store.countEvents()).toBe(0);
    expect((await store.hourlyRollups(new Date("2026-11-29T00:00:00Z"))).length).toBeGreaterThan(0);
  });

  it("keeps one alert per key through raise, acknowledge and resolve, with its webhooks queued", async () => {
    const a = (await store.raiseAlert(
      {
        key: "no-ttl:L9",
        rule: "no-ttl",
        severity: "critical",
        lockId: "L9",
        backend: "redis",
        source: "s",
        resource: "r",
        message: "m",
        evidence: { events: [] },
        raisedAt: new Date(),
      },
      () => [{ url: "http://127.0.0.1:9/hook", kind: "raised", body: "{}" }],
    ))!;
    expect((await store.openAlerts()).map((x) => x.id)).toEqual([a.id]);
    expect(a).toMatchObject({ occurrences: 1, lastSeenAt: a.raisedAt, latestHolder: null, evidence: { events: [] } });
    const seenAt = new Date(Date.parse(a.raisedAt) + 20_000).toISOString();
    await store.refreshAlert(a.id, {
      message: "m2",
      severity: "critical",
      lastSeenAt: seenAt,
      occurrences: 2,
      latestHolder: "driver-3",
    });
    expect((await store.openAlerts())[0]).toMatchObject({
      message: "m2",
      occurrences: 2,
      lastSeenAt: seenAt,
      latestHolder: "driver-3",
      evidence: { events: [] },
    });
    expect(await store.acknowledgeAlert(a.id, "op", new Date(), [])).toMatchObject({
      state: "acknowledged",
      ackedBy: "op",
    });
    expect(await store.acknowledgeAlert(a.id, "op2", new Date(), [])).toBeNull();
    expect(await store.resolveAlert(a.id, new Date(), [])).toMatchObject({ state: "resolved" });
    expect(await store.openAlerts()).toEqual([]);
    const [due] = await store.dueDeliveries(new Date(), 10);
    expect(due).toMatchObject({ url: "http://127.0.0.1:9/hook", attempts: 0 });
    await store.markFailed(due!.id, "refused", new Date(Date.now() + 60_000));
    expect(await store.dueDeliveries(new Date(), 10)).toEqual([]);
    expect(await store.pendingDeliveries()).toBe(1);
  });

  it("raises, refreshes and reads alerts in batches as the single calls do", async () => {
    const alert = (key: string, lockId: string) => ({
      key,
      rule: "no-ttl",
      severity: "critical",
      lockId,
      backend: "redis",
      source: "s",
      resource: `r-${lockId}`,
      message: `m-${key}`,
      evidence: { events: [{ id: "x", owner: null }], lock: { id: lockId, nested: [1, "two"] } },
      raisedAt: new Date("2026-11-29T21:30:00.123Z"),
    });
    const hook = (kind: string) => (id: string) => [
      { url: "http://127.0.0.1:9/hook", kind, body: JSON.stringify({ id }) },
    ];
    const pendingBefore = await store.pendingDeliveries();
    const [b1, b2, again] = await store.raiseAlerts([
      { alert: alert("batch:B1", "B1"), outbox: hook("raised") },
      { alert: alert("batch:B2", "B2"), outbox: hook("raised") },
      { alert: alert("batch:B1", "B1"), outbox: hook("raised") },
    ]);
    // The third names a key the batch itself raised: nothing written for it, no webhook either.
    expect(again).toBeNull();
    expect(await store.pendingDeliveries()).toBe(pendingBefore + 2);
    for (const a of [b1!, b2!]) {
      const { lastSeenAt, occurrences, latestHolder, ...stored } = (await store.findAlert(a.id))!;
      expect({ lastSeenAt, occurrences, latestHolder }).toEqual({
        lastSeenAt: a.raisedAt,
        occurrences: 1,
        latestHolder: null,
      });
      expect(a).toMatchObject(stored);
    }
    await store.refreshAlerts([
      {
        id: b1!.id,
        refresh: {
          message: "m2",
          severity: "warning",
          lastSeenAt: "2026-11-29T21:31:00.000Z",
          occurrences: 2,
          latestHolder: "h",
        },
      },
      {
        id: b2!.id,
        refresh: {
          message: "m3",
          severity: "critical",
          lastSeenAt: "2026-11-29T21:32:00.000Z",
          occurrences: 1,
          latestHolder: null,
        },
      },
    ]);
    const full = (await store.openAlerts()).filter((a) => a.key.startsWith("batch:"));
    expect(full.find((a) => a.id === b1!.id)).toMatchObject({
      message: "m2",
      severity: "warning",
      lastSeenAt: "2026-11-29T21:31:00.000Z",
      occurrences: 2,
      latestHolder: "h",
      evidence: alert("batch:B1", "B1").evidence,
    });
    // What an evaluation reads is the full alert without its evidence.
    const states = (await store.openAlertStates()).filter((a) => a.key.startsWith("batch:"));
    expect(states.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      full
        .map(({ evidence: _e, ackedAt: _a, ackedBy: _b, resolvedAt: _r, ...rest }) => rest)
        .sort((a, b) => a.id.localeCompare(b.id)),
    );
    const openBefore = await store.countOpenAlerts();
    await store.resolveAlert(b2!.id, new Date(), []);
    expect(await store.countOpenAlerts()).toBe(openBefore - 1);
    // A resolved alert is not refreshed.
    await store.refreshAlerts([
      {
        id: b2!.id,
        refresh: {
          message: "late",
          severity: "critical",
          lastSeenAt: "2026-11-29T21:33:00.000Z",
          occurrences: 1,
          latestHolder: null,
        },
      },
    ]);
    expect((await store.findAlert(b2!.id))!.message).toBe("m3");
  });

  it("reads and refreshes a batch holding an alert whose stored evidence is not JSON", async () => {
    const [good, bad] = (await store.raiseAlerts(
      ["tamper:good", "tamper:bad"].map((key) => ({ alert: testAlert(key), outbox: () => [] })),
    )) as AlertView[];
    // Written by hand, as nothing in lockscope writes it.
    const sql = `UPDATE "Alert" SET "evidence" = '{not json' WHERE "id" = '${bad!.id}'`;
    if (setup.name === "sqlite") {
      const db = new Database(url.slice("file:".length));
      db.prepare(sql).run();
      db.close();
    } else {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(sql);
      await c.end();
    }
    const states = (await store.openAlertStates()).filter((a) => a.key.startsWith("tamper:"));
    expect(states.find((a) => a.id === bad!.id)).toMatchObject({ lastSeenAt: bad!.raisedAt, occurrences: 1 });
    const seen = {
      message: "m2",
      severity: "critical" as const,
      lastSeenAt: "2026-11-29T21:31:00.000Z",
      occurrences: 2,
      latestHolder: null,
    };
    await store.refreshAlerts([good!, bad!].map((a) => ({ id: a.id, refresh: seen })));
    for (const a of [good!, bad!]) expect(await store.findAlert(a.id)).toMatchObject({ message: "m2", occurrences: 2 });
  });

  it("reads the newest events of many locks at once as listEvents reads them one lock at a time", async () => {
    const events = ["R1", "R2"].flatMap((lock) =>
      Array.from({ length: 13 }, (_, i) => ({
        ...ev(`recent-${lock}-${String(i).padStart(2, "0")}-xxxx`, "acquired", lock),
        // Two events share each millisecond: the id breaks the tie, as listEvents orders them.
        at: new Date(Date.parse(at) + Math.floor(i / 2)).toISOString(),
      })),
    );
    await store.saveEvents(events);
    const recent = await store.recentEvents(["R1", "R2", "R-none", "R1"], 10);
    expect([...recent.keys()].sort()).toEqual(["R-none", "R1", "R2"]);
    expect(recent.get("R-none")).toEqual([]);
    for (const lock of ["R1", "R2"]) {
      expect(recent.get(lock)).toEqual(await store.listEvents({ lockId: lock, limit: 10 }));
      expect(recent.get(lock)).toHaveLength(10);
    }
  });

  it("returns an event as it was stored: time to the millisecond, details, nulls and TTLs", async () => {
    const e: LockEvent = {
      id: "round-trip-xxxxxxxx",
      agentId: "agent-7",
      type: "owner-changed",
      lockId: "RT",
      backend: "redlock",
      source: "group:default",
      resource: "orders:42",
      owner: null,
      previousOwner: "tok-1",
      library: "node-redlock",
      ttlMs: 2_000_000_000,
      at: "2026-12-01T08:15:30.007Z",
      detail: { observedBy: "poll", afterExpiry: true, heldMs: 1234.5 },
    };
    await store.saveEvents([e]);
    expect(await store.listEvents({ lockId: "RT", limit: 5 })).toEqual([e]);
    expect(
      await store.listEvents({ resource: "orders:42", since: new Date("2026-12-01T08:15:30.008Z"), limit: 5 }),
    ).toEqual([]);
  });

  it("pages a lock's history newest first with a cursor that neither skips nor repeats same-millisecond events", async () => {
    const t0 = Date.parse("2026-12-01T09:00:00.000Z");
    // Five events, two pairs sharing a millisecond (a release and the next acquire seen in one read).
    const times = [t0, t0 + 1000, t0 + 1000, t0 + 2000, t0 + 2000];
    const events = times.map((ms, i): LockEvent => ({
      ...ev(`page-${i}`, i % 2 === 0 ? "acquired" : "released", "PG"),
      at: new Date(ms).toISOString(),
    }));
    await store.saveEvents(events);
    const seen: string[] = [];
    let before: { at: Date; id: string } | undefined;
    for (let page = 0; page < 5; page++) {
      const rows = await store.listEvents({ lockId: "PG", limit: 2, before });
      if (rows.length === 0) break;
      seen.push(...rows.map((r) => r.id));
      const last = rows[rows.length - 1]!;
      before = { at: new Date(last.at), id: last.id };
    }
    expect(seen).toEqual(["page-4", "page-3", "page-2", "page-1", "page-0"]);
    const released = await store.listEvents({ lockId: "PG", limit: 10, types: ["released"] });
    expect(released.map((r) => r.id)).toEqual(["page-3", "page-1"]);
  });

  // Two dashboards on PostgreSQL; on SQLite (one dashboard per file) two agents' batches on the one dashboard.
  it("stores overlapping batches written at once exactly once, counted once", async () => {
    let other = store;
    if (setup.name === "postgresql") {
      other = openStore(url);
      others.push(other);
    }
    const batch = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => ({
        ...ev(`twice-${String(from + i).padStart(5, "0")}-xxxxxxxx`, "acquired", `T${(from + i) % 50}`),
        at: "2026-12-01T09:10:00.000Z",
      }));
    const before = await store.countEvents();
    // The same agent's replay reaching two dashboards (it reconnected elsewhere) while the first is still storing.
    const results = await Promise.all([
      store.saveEvents(batch(0, 3000)),
      other.saveEvents(batch(1500, 4500)),
      store.saveEvents(batch(1000, 2000)),
    ]);
    expect(await store.countEvents()).toBe(before + 4500);
    const freshIds = results.flatMap((r) => r.fresh.map((e) => e.id));
    expect(freshIds).toHaveLength(4500);
    expect(new Set(freshIds).size).toBe(4500);
    expect(results.map((r) => r.stored.length)).toEqual([3000, 3000, 1000]);
    const rows = (await store.hourlyRollups(new Date("2026-12-01T09:00:00Z"))).filter((r) => r.lockId.startsWith("T"));
    expect(rows).toHaveLength(50);
    expect(rows.reduce((n, r) => n + r.acquisitions, 0)).toBe(4500);
  });

  it("records force-release attempts and lists them newest first", async () => {
    const entry = {
      actor: "op",
      role: "operator",
      via: "token",
      action: "release",
      lockId: "L1",
      backend: "redis",
      source: "s",
      resource: "orders:42",
      observedOwner: "tok",
      reason: "stuck",
      dryRun: false,
      outcome: "released" as const,
      message: null,
      perNode: [{ node: "n1", outcome: "released" as const }],
      clientAddress: "127.0.0.1",
    };
    const first = await store.addAudit(entry);
    const second = await store.addAudit({ ...entry, outcome: "refused-owner-changed" as const });
    const listed = await store.listAudit({ resource: "orders", limit: 10 });
    expect(listed.map((a) => a.id)).toEqual(
      Date.parse(second.at) >= Date.parse(first.at) ? [second.id, first.id] : [first.id, second.id],
    );
    expect(listed[0]!.perNode).toEqual([{ node: "n1", outcome: "released" }]);
  });

  it("applies no migration twice: a restart's migration of an up-to-date store changes nothing", async () => {
    await store.close();
    const again = await migrateDatabase(url, projectRoot);
    store = openStore(url);
    if (setup.name === "postgresql") expect(again).toEqual({ applied: [], unknown: [] });
    expect(await store.countEvents()).toBeGreaterThan(0);
  });
});

// The SQLite ingest and alert reads and writes run on the connection Prisma's adapter opened (better-sqlite3 is
// synchronous): a real file.
describe("the SQLite fast paths", () => {
  let dir: string;
  let file: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "lockscope-ingest-"));
    file = path.join(dir, "store.db");
    await migrateDatabase(`file:${file}`, projectRoot);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("lets the event loop turn between transactions of a large batch", async () => {
    const store = openStore(`file:${file}`);
    try {
      await store.countEvents();
      const batch = Array.from({ length: 4 * SQLITE_EVENTS_PER_TRANSACTION.max }, (_, i) =>
        ev(`turns-${i}-xxxxxxxx`, "acquired", `T${i}`),
      );
      let turns = 0;
      let done = false;
      const tick = () => {
        if (done) return;
        turns++;
        setImmediate(tick);
      };
      setImmediate(tick);
      const { fresh } = await store.saveEvents(batch);
      done = true;
      expect(fresh).toHaveLength(batch.length);
      // One turn at least between each two of the four transactions (all in one synchronous stretch before).
      expect(turns).toBeGreaterThanOrEqual(3);
    } finally {
      await store.close();
    }
  });

  it("sizes each transaction by how long the last ones took", async () => {
    const db = new Database(file);
    try {
      // Every transaction "takes" `perTransactionMs` on this clock (read once before and once after each).
      let perTransactionMs = 40;
      let t = 0;
      let reads = 0;
      const ingest = new SqliteIngest(db, () => (reads++ % 2 === 0 ? t : (t += perTransactionMs)));
      const events = (tag: string, n: number) =>
        Array.from({ length: n }, (_, i) => ev(`size-${tag}-${i}-xxxxxxxx`, "acquired", `S${tag}${i}`));
      expect(ingest.transactionSize).toBe(SQLITE_EVENTS_PER_TRANSACTION.first);
      expect(await ingest.save(events("slow", 600))).toHaveLength(600);
      // 40 ms for 250 events is 4 times the target: each next transaction is smaller, down to the floor.
      expect(ingest.transactionSize).toBeLessThan(SQLITE_EVENTS_PER_TRANSACTION.first / 2);
      expect(ingest.transactionSize).toBeGreaterThanOrEqual(SQLITE_EVENTS_PER_TRANSACTION.min);
      perTransactionMs = 1;
      expect(await ingest.save(events("fast", 6000))).toHaveLength(6000);
      expect(ingest.transactionSize).toBe(SQLITE_EVENTS_PER_TRANSACTION.max);
    } finally {
      db.close();
    }
  });

  it("reads every unresolved alert when there are more than one page of them", async () => {
    const store = openStore(`file:${file}`);
    try {
      const n = 4500;
      const raised = await store.raiseAlerts(
        Array.from({ length: n }, (_, i) => ({
          alert: testAlert(`page:${i}`, { lockId: `P${i}`, resource: `p${i}`, evidence: {} }),
          outbox: () => [],
        })),
      );
      await store.resolveAlert(raised[2000]!.id, new Date(), []);
      const ids = (await store.openAlertStates()).filter((a) => a.key.startsWith("page:")).map((a) => a.id);
      expect(new Set(ids).size).toBe(n - 1);
      expect(ids).not.toContain(raised[2000]!.id);
    } finally {
      await store.close();
    }
  });

  it("reads and refreshes an alert whose stored evidence is not a JSON object", async () => {
    const db = new Database(file);
    try {
      const insert = db.prepare(
        `INSERT INTO "Alert" ("id", "key", "rule", "severity", "state", "source", "message", "evidence", "raisedAt")
          VALUES (?, ?, 'no-ttl', 'critical', 'open', 's', 'm', ?, '2026-11-29T21:30:00.000+00:00')`,
      );
      insert.run("bad-1", "bad:1", "{not json");
      insert.run("bad-2", "bad:2", "[1,2]");
      const alerts = new SqliteAlerts(db);
      const states = alerts.openStates(0, 1_000_000).rows.filter((a) => a.id.startsWith("bad-"));
      expect(states.map((a) => [a.id, a.lastSeenAt, a.occurrences, a.latestHolder])).toEqual([
        ["bad-1", "2026-11-29T21:30:00.000Z", 1, null],
        ["bad-2", "2026-11-29T21:30:00.000Z", 1, null],
      ]);
      const seen = {
        message: "m2",
        severity: "critical" as const,
        lastSeenAt: "2026-11-29T21:31:00.000Z",
        occurrences: 1,
        latestHolder: null,
      };
      alerts.refresh([
        { id: "bad-1", refresh: seen },
        { id: "bad-2", refresh: seen },
      ]);
      for (const id of ["bad-1", "bad-2"]) {
        const evidence = db.prepare(`SELECT "evidence" FROM "Alert" WHERE "id" = ?`).pluck().get(id) as string;
        expect(JSON.parse(evidence)).toEqual({ seen });
      }
    } finally {
      db.close();
    }
  });

  it("waits for a transaction open on its connection instead of joining it, so its rollback takes none of the events", async () => {
    const db = new Database(file);
    try {
      const ingest = new SqliteIngest(db);
      db.prepare("BEGIN").run();
      db.prepare(`DELETE FROM "Event" WHERE "id" LIKE 'turns-%'`).run();
      let stored = false;
      const saving = ingest.save([ev("waits-1-xxxxxxxx", "acquired", "W1")]).then((fresh) => {
        stored = true;
        return fresh;
      });
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(stored).toBe(false);
      db.prepare("ROLLBACK").run();
      expect((await saving).map((e) => e.id)).toEqual(["waits-1-xxxxxxxx"]);
      const ids = db.prepare(`SELECT "id" FROM "Event" WHERE "id" = 'waits-1-xxxxxxxx'`).pluck().all();
      expect(ids).toEqual(["waits-1-xxxxxxxx"]);
      // The other transaction's rollback stands: its delete is undone.
      expect(db.prepare(`SELECT count(*) FROM "Event" WHERE "id" LIKE 'turns-%'`).pluck().get()).toBe(
        4 * SQLITE_EVENTS_PER_TRANSACTION.max,
      );
    } finally {
      db.close();
    }
  });
});

describe("the PostgreSQL store when the server ends its connection", () => {
  it("logs the lost idle connection and answers from a new one, before Prisma's first query", async () => {
    const db = await createTestDatabase();
    const admin = new pg.Client({ connectionString: SHARED_POSTGRES });
    const lines: string[] = [];
    let store: HistoryStore | null = null;
    try {
      await migrateDatabase(db.url, projectRoot);
      await admin.connect();
      const ours = async () =>
        (
          await admin.query(
            `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'lockscope-dashboard'`,
            [db.name],
          )
        ).rows.map((r: { pid: number }) => r.pid);
      store = openStore(db.url, { log: (line) => lines.push(line) });
      // The unresolved alerts are read through the pool itself: its idle connection exists, Prisma's does not yet.
      expect(await store.openAlertStates()).toEqual([]);
      const pids = await ours();
      expect(pids.length).toBeGreaterThan(0);
      await admin.query(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, [pids]);
      await waitFor("the terminated backends to be gone", async () => (await ours()).length === 0);
      await waitFor("the lost connection to be logged", () => lines.length > 0);
      expect(lines[0]).toMatch(/^history store: idle PostgreSQL connection lost: terminating connection/);
      expect(await store.openAlertStates()).toEqual([]);
      expect(await store.openAlerts()).toEqual([]);
    } finally {
      await store?.close();
      await admin.end().catch(() => undefined);
      await db.drop();
    }
  });
});
