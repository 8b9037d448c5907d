import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { Lock, SourceStatus } from "../../lib/contract/lock";
import { AlertEngine } from "../../lib/server/alerts/alert-engine";
import { DEFAULT_ALERT_RULES } from "../../lib/server/alerts/rules";
import { LiveState } from "../../lib/server/live-state";
import { applyMigrations, migrateDatabase, projectRoot } from "../../lib/server/migrate";
import { migratePostgres } from "../../lib/server/pg-migrate";
import { openStore, type HistoryStore } from "../../lib/server/store";
import { createTestDatabase } from "../harness/postgres-server";

// At most one unresolved alert per key, held by the database (a partial unique index in both stores' migrations):
// two evaluations at once (one outlived the leader's lease) raise one alert and queue one webhook, and an upgrade of
// a database that already holds duplicates resolves all but the oldest instead of failing.
const NEW_MIGRATION = "20261201160000_open_alert_key";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-alert-once-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const noTtl: Lock = {
  id: "L-race",
  backend: "redis",
  source: "s",
  resource: "lock:race",
  owner: "1",
  library: "generic",
  rule: "r",
  ttlMs: null,
  holder: null,
  waiters: [],
  since: new Date().toISOString(),
  observedAt: new Date().toISOString(),
  kind: "string",
  valuePreview: "1",
  hazards: [{ code: "no-ttl", severity: "critical", message: "never expires" }],
  agentId: "a",
};

/** Each dashboard's own live state (the real one), seeing the same no-TTL lock from its agent. */
function liveWithLock(): LiveState {
  const live = new LiveState();
  live.applySnapshot({
    agentId: "a",
    agentName: "a",
    version: "test",
    at: new Date().toISOString(),
    sources: [] as SourceStatus[],
    locks: [structuredClone(noTtl)],
  });
  return live;
}

/**
 * The real store, except that openAlertStates (what an evaluation reads) answers only once `parties` evaluators have
 * read it: every one of them has seen "no alert open" before any raises, which is the race a lease overrun allows.
 */
function meetingAfterRead(stores: HistoryStore[]): HistoryStore[] {
  let arrived = 0;
  let allRead!: () => void;
  const gate = new Promise<void>((r) => (allRead = r));
  return stores.map((s) => ({
    ...s,
    async openAlertStates() {
      const rows = await s.openAlertStates();
      if (++arrived === stores.length) allRead();
      await gate;
      return rows;
    },
  }));
}

interface Setup {
  name: "sqlite" | "postgresql";
  url(): Promise<string>;
  /** Two dashboards on PostgreSQL; on SQLite (one dashboard per file) two evaluators on the one store. */
  dashboards: number;
}

const setups: Setup[] = [
  { name: "sqlite", url: async () => `file:${path.join(tempDir(), "store.db")}`, dashboards: 1 },
  {
    name: "postgresql",
    async url() {
      const db = await createTestDatabase();
      cleanups.push(() => db.drop());
      return db.url;
    },
    dashboards: 2,
  },
];

/** Rows written the way each engine keeps a Prisma DateTime (see sqlTime in lib/server/store.ts). */
interface SeedAlert {
  id: string;
  key: string;
  state: string;
  raisedAt: string;
}

const seeds: SeedAlert[] = [
  { id: "k1-a", key: "no-ttl:K1", state: "open", raisedAt: "2026-12-01T10:00:00.000Z" },
  { id: "k1-b", key: "no-ttl:K1", state: "acknowledged", raisedAt: "2026-12-01T09:00:00.000Z" },
  { id: "k1-c", key: "no-ttl:K1", state: "open", raisedAt: "2026-12-01T11:00:00.000Z" },
  { id: "k2-old", key: "no-ttl:K2", state: "resolved", raisedAt: "2026-11-30T08:00:00.000Z" },
  { id: "k2-a", key: "no-ttl:K2", state: "open", raisedAt: "2026-12-01T12:00:00.000Z" },
  { id: "k3-b", key: "no-ttl:K3", state: "open", raisedAt: "2026-12-01T13:00:00.000Z" },
  { id: "k3-a", key: "no-ttl:K3", state: "open", raisedAt: "2026-12-01T13:00:00.000Z" },
];

const insertAlert = `INSERT INTO "Alert" ("id", "key", "rule", "severity", "state", "source", "message", "evidence", "raisedAt")
  VALUES ($1, $2, 'no-ttl', 'critical', $3, 's', 'm', '{}', $4)`;

/** Migrates a fresh database up to (not including) the new migration, stores the duplicates, then upgrades. */
async function upgradeWithDuplicates(setup: Setup, url: string): Promise<void> {
  if (setup.name === "postgresql") {
    const older = tempDir();
    cpSync(path.join(projectRoot, "prisma", "postgres", "migrations"), older, { recursive: true });
    rmSync(path.join(older, NEW_MIGRATION), { recursive: true });
    await migratePostgres(url, older);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      for (const s of seeds) await c.query(insertAlert, [s.id, s.key, s.state, s.raisedAt.slice(0, -1)]);
    } finally {
      await c.end();
    }
    expect(await migratePostgres(url, path.join(projectRoot, "prisma", "postgres", "migrations"))).toEqual({
      applied: [NEW_MIGRATION],
      unknown: [],
    });
    return;
  }
  // SQLite upgrades through `prisma migrate deploy` in a project root: a copy whose migrations stop before the new
  // one, the code and packages linked.
  const root = tempDir();
  for (const f of ["prisma.config.ts", "package.json"]) copyFileSync(path.join(projectRoot, f), path.join(root, f));
  for (const d of ["lib", "node_modules"]) symlinkSync(path.join(projectRoot, d), path.join(root, d));
  mkdirSync(path.join(root, "prisma"));
  copyFileSync(path.join(projectRoot, "prisma", "schema.prisma"), path.join(root, "prisma", "schema.prisma"));
  cpSync(path.join(projectRoot, "prisma", "migrations"), path.join(root, "prisma", "migrations"), { recursive: true });
  rmSync(path.join(root, "prisma", "migrations", NEW_MIGRATION), { recursive: true });
  applyMigrations(url, root);
  const db = new Database(url.slice("file:".length));
  try {
    const insert = db.prepare(insertAlert.replace(/\$\d/g, "?"));
    for (const s of seeds) insert.run(s.id, s.key, s.state, `${s.raisedAt.slice(0, -1)}+00:00`);
  } finally {
    db.close();
  }
  applyMigrations(url, projectRoot);
}

function newAlert(key: string) {
  return {
    key,
    rule: "no-ttl",
    severity: "critical",
    lockId: null,
    backend: null,
    source: "s",
    resource: null,
    message: "m",
    evidence: {},
    raisedAt: new Date(),
  };
}

describe.each(setups)("one unresolved alert per key on $name", (setup) => {
  it("two evaluators raising the same alert at once store one open alert and queue one webhook", async () => {
    const url = await setup.url();
    await migrateDatabase(url, projectRoot);
    const stores = Array.from({ length: setup.dashboards }, () => openStore(url));
    cleanups.push(() => Promise.all(stores.map((s) => s.close())).then(() => undefined));
    const [a, b] = meetingAfterRead([stores[0]!, stores[stores.length - 1]!]);
    const engine = (store: HistoryStore) =>
      new AlertEngine({
        live: liveWithLock(),
        store,
        rules: DEFAULT_ALERT_RULES,
        webhooks: [{ url: "http://127.0.0.1:9/hook", format: "json" }],
        publicUrl: null,
      });
    const results = await Promise.all([engine(a!).evaluate(), engine(b!).evaluate()]);
    // Both saw nothing open, both tried: one alert, and the other evaluator reports nothing raised.
    expect(results.map((r) => r.raised.length).sort()).toEqual([0, 1]);
    const open = await stores[0]!.openAlerts();
    expect(open.map((x) => [x.key, x.state])).toEqual([["no-ttl:L-race", "open"]]);
    expect(await stores[0]!.listAlerts({ limit: 10 })).toHaveLength(1);
    expect(await stores[0]!.pendingDeliveries()).toBe(1);
    const [due] = await stores[0]!.dueDeliveries(new Date(Date.now() + 1000), 10);
    expect(JSON.parse(due!.body)).toMatchObject({ event: "alert.raised", alert: { id: open[0]!.id } });
  });

  it("an upgrade resolves all but the oldest of stored duplicates, then refuses a second one", async () => {
    const url = await setup.url();
    await upgradeWithDuplicates(setup, url);
    const store = openStore(url);
    cleanups.push(() => store.close());
    const all = await store.listAlerts({ limit: 100 });
    const state = Object.fromEntries(all.map((x) => [x.id, x.state]));
    expect(state).toEqual({
      "k1-a": "resolved",
      "k1-b": "acknowledged",
      "k1-c": "resolved",
      "k2-old": "resolved",
      "k2-a": "open",
      "k3-a": "open",
      "k3-b": "resolved",
    });
    for (const id of ["k1-a", "k1-c", "k3-b"]) {
      expect(Date.now() - Date.parse(all.find((x) => x.id === id)!.resolvedAt!)).toBeLessThan(60_000);
    }
    // Open or acknowledged, the key is taken: raising it again writes nothing, webhook included.
    const outbox = [{ url: "http://127.0.0.1:9/hook", kind: "raised", body: "{}" }];
    expect(await store.raiseAlert(newAlert("no-ttl:K1"), () => outbox)).toBeNull();
    expect(await store.raiseAlert(newAlert("no-ttl:K2"), () => outbox)).toBeNull();
    expect(await store.listAlerts({ limit: 100 })).toHaveLength(seeds.length);
    expect(await store.pendingDeliveries()).toBe(0);
    // Once resolved, the key is free again.
    expect(await store.resolveAlert("k2-a", new Date(), [])).toMatchObject({ state: "resolved" });
    expect(await store.raiseAlert(newAlert("no-ttl:K2"), () => outbox)).toMatchObject({ state: "open" });
    expect(await store.pendingDeliveries()).toBe(1);
  });
});
