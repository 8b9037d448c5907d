import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { applyMigrations, projectRoot } from "../../lib/server/migrate";
import { openStore, type HistoryStore } from "../../lib/server/store";

// The history store against a real SQLite file, migrated the way the dashboard migrates it at start.
let dir: string;
let store: HistoryStore;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), "lockscope-store-"));
  const url = `file:${path.join(dir, "store.db")}`;
  applyMigrations(url, projectRoot);
  store = openStore(url);
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

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

describe("history store", () => {
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
    const a = await store.raiseAlert(
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
    );
    expect((await store.openAlerts()).map((x) => x.id)).toEqual([a.id]);
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
});
