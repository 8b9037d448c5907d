import { describe, expect, it } from "vitest";
import type { AlertView } from "../../lib/contract/alerts";
import type { Lock, SourceStatus } from "../../lib/contract/lock";
import { AlertEngine, alertsChanged } from "../../lib/server/alerts/alert-engine";
import { ALERTS_CHANGED_MAX } from "../../lib/contract/socket";
import { DEFAULT_ALERT_RULES } from "../../lib/server/alerts/rules";
import { LiveState } from "../../lib/server/live-state";
import type { HistoryStore, NewAlert, OutboxItem } from "../../lib/server/store";
import type { AlertRefresh } from "../../lib/server/alerts/alert-refresh";

/** The live state (real, pure) and the store the engine writes to, faked: an in-memory alert table. */
function setup() {
  let now = 1_000_000;
  const live = new LiveState(() => now);
  const setLocks = (locks: Lock[]) =>
    live.applySnapshot({
      agentId: "a",
      agentName: "a",
      version: "test",
      at: new Date(now).toISOString(),
      sources: [] as SourceStatus[],
      locks: structuredClone(locks),
    });
  const alerts: AlertView[] = [];
  const outbox: OutboxItem[] = [];
  const raiseAlert = (a: NewAlert, ob: (id: string) => OutboxItem[]) => {
    // As the stores' partial unique index: one unresolved alert per key (another dashboard may have raised it).
    if (alerts.some((x) => x.key === a.key && x.state !== "resolved")) return null;
    const view: AlertView = {
      ...a,
      id: `A${alerts.length + 1}`,
      state: "open",
      severity: a.severity as AlertView["severity"],
      backend: a.backend as AlertView["backend"],
      raisedAt: a.raisedAt.toISOString(),
      ackedAt: null,
      ackedBy: null,
      resolvedAt: null,
    };
    alerts.push(view);
    outbox.push(...ob(view.id));
    return view;
  };
  const reads = { open: 0, refreshes: 0 };
  const store = {
    openAlertStates: async () => {
      reads.open++;
      return alerts.filter((a) => a.state !== "resolved").map((a) => ({ ...a }));
    },
    findAlert: async (id: string) => alerts.find((a) => a.id === id) ?? null,
    recentEvents: async (ids: string[]) => new Map(ids.map((id) => [id, []])),
    raiseAlerts: async (items: Array<{ alert: NewAlert; outbox: (id: string) => OutboxItem[] }>) =>
      items.map((i) => raiseAlert(i.alert, i.outbox)),
    refreshAlerts: async (items: Array<{ id: string; refresh: AlertRefresh }>) => {
      reads.refreshes += items.length;
      for (const { id, refresh } of items)
        Object.assign(
          alerts.find((x) => x.id === id)!,
          refresh,
        );
    },
    resolveAlert: async (id: string, at: Date, ob: OutboxItem[]) => {
      const a = alerts.find((x) => x.id === id)!;
      if (a.state === "resolved") return null;
      a.state = "resolved";
      a.resolvedAt = at.toISOString();
      outbox.push(...ob);
      return a;
    },
  } as unknown as HistoryStore;
  const engine = new AlertEngine({
    live,
    store,
    rules: DEFAULT_ALERT_RULES,
    webhooks: [{ url: "http://127.0.0.1:9/hook", format: "json" }],
    publicUrl: null,
    resolveAfterMs: 5000,
    now: () => now,
  });
  return {
    engine,
    alerts,
    outbox,
    reads,
    raiseAlert,
    setLocks,
    advance: (ms: number) => (now += ms),
  };
}

const noTtl: Lock = {
  id: "L1",
  backend: "redis",
  source: "s",
  resource: "lock:x",
  owner: "1",
  library: "generic",
  rule: "r",
  ttlMs: null,
  holder: null,
  waiters: [],
  since: new Date(1_000_000).toISOString(),
  observedAt: new Date(1_000_000).toISOString(),
  kind: "string",
  valuePreview: "1",
  hazards: [{ code: "no-ttl", severity: "critical", message: "never expires" }],
  agentId: "a",
};

describe("AlertEngine", () => {
  it("raises once per lock and rule, keeps it through a short flap, resolves after the grace", async () => {
    const t = setup();
    t.setLocks([noTtl]);
    expect((await t.engine.evaluate()).raised.map((a) => a.rule)).toEqual(["no-ttl"]);
    expect(t.engine.openAlerts().map((a) => a.id)).toEqual(["A1"]);
    expect((await t.engine.evaluate()).raised).toEqual([]);
    t.setLocks([]);
    t.advance(1000);
    expect((await t.engine.evaluate()).resolved).toEqual([]);
    t.setLocks([noTtl]); // back within the grace: the same alert goes on
    t.advance(1000);
    expect(await t.engine.evaluate()).toEqual({ raised: [], resolved: [] });
    t.setLocks([]);
    t.advance(1000);
    await t.engine.evaluate();
    t.advance(5000);
    expect((await t.engine.evaluate()).resolved.map((a) => a.id)).toEqual(["A1"]);
    expect(t.engine.openAlerts()).toEqual([]);
    expect(t.alerts).toHaveLength(1);
    expect(t.outbox.map((o) => o.kind)).toEqual(["raised", "resolved"]);
  });

  it("a flapping takeover stays one alert that names its latest holder and counts its occurrences", async () => {
    const t = setup();
    const takeover = (owner: string, from: string): Lock => ({
      ...noTtl,
      owner,
      ttlMs: 10_000,
      hazards: [
        {
          code: "expired-while-held",
          severity: "critical",
          message: `Took over from ${from} whose lease had run out.`,
        },
      ],
    });
    t.setLocks([takeover("driver-2", "driver-1")]);
    await t.engine.evaluate();
    t.setLocks([]);
    t.advance(1000);
    await t.engine.evaluate();
    t.setLocks([takeover("driver-3", "driver-2")]);
    t.advance(1000);
    expect(await t.engine.evaluate()).toEqual({ raised: [], resolved: [] });
    expect(t.alerts).toHaveLength(1);
    expect(t.alerts[0]).toMatchObject({
      message: "Took over from driver-2 whose lease had run out.",
      latestHolder: "driver-3",
      occurrences: 2,
      lastSeenAt: new Date(1_002_000).toISOString(),
    });
    // Unchanged and seen again soon after: no write; 15 s later "last seen" moves on.
    t.advance(1000);
    await t.engine.evaluate();
    expect(t.alerts[0]!.lastSeenAt).toBe(new Date(1_002_000).toISOString());
    t.advance(15_000);
    await t.engine.evaluate();
    expect(t.alerts[0]).toMatchObject({ lastSeenAt: new Date(1_018_000).toISOString(), occurrences: 2 });
    // Only the raise went to webhooks: a refresh is not a new alert.
    expect(t.outbox.map((o) => o.kind)).toEqual(["raised"]);
  });
});

describe("AlertEngine's copy of the unresolved alerts", () => {
  it("reads them from the store once, keeps its own writes, and reads again after OPEN_RESYNC_MS", async () => {
    const t = setup();
    t.setLocks([noTtl]);
    await t.engine.evaluate();
    for (let i = 0; i < 5; i++) {
      t.advance(4000);
      await t.engine.evaluate();
    }
    expect(t.reads.open).toBe(1);
    // Its refreshes are in the copy: the holder written at the first run after the raise (1,004,000), "last seen"
    // again 16 s later; the copy knows both, so no other run wrote.
    expect(t.alerts[0]).toMatchObject({ latestHolder: "1", lastSeenAt: new Date(1_020_000).toISOString() });
    expect(t.reads.refreshes).toBe(2);
    expect(t.engine.openAlerts()[0]).toMatchObject({ id: "A1", lastSeenAt: new Date(1_020_000).toISOString() });
    t.advance(10_000);
    await t.engine.evaluate();
    expect(t.reads.open).toBe(2);
    // Resolved by this engine: gone from the copy without a read.
    t.setLocks([]);
    await t.engine.evaluate();
    t.advance(6000);
    expect((await t.engine.evaluate()).resolved.map((a) => a.id)).toEqual(["A1"]);
    expect(t.engine.openAlerts()).toEqual([]);
    expect(t.reads.open).toBe(2);
  });

  it("reads the store again after another dashboard raised or resolved an alert first", async () => {
    const t = setup();
    t.setLocks([noTtl]);
    await t.engine.evaluate();
    // Another dashboard raises the alert of a second lock before this one does.
    const other: Lock = { ...noTtl, id: "L2", resource: "lock:y" };
    t.raiseAlert(
      {
        key: "no-ttl:L2",
        rule: "no-ttl",
        severity: "critical",
        lockId: "L2",
        backend: "redis",
        source: "s",
        resource: "lock:y",
        message: "never expires",
        evidence: {},
        raisedAt: new Date(1_000_000),
      } as unknown as NewAlert,
      () => [],
    );
    t.setLocks([noTtl, other]);
    t.advance(1000);
    expect((await t.engine.evaluate()).raised).toEqual([]);
    expect(t.reads.open).toBe(1);
    t.advance(1000);
    await t.engine.evaluate();
    expect(t.reads.open).toBe(2);
    expect(t.engine.openAlerts().map((a) => a.key)).toEqual(["no-ttl:L1", "no-ttl:L2"]);
    // And resolves it: the other dashboard resolves it first, this one finds it resolved and reads again.
    t.setLocks([noTtl]);
    t.advance(1000);
    await t.engine.evaluate();
    t.alerts.find((a) => a.key === "no-ttl:L2")!.state = "resolved";
    t.advance(6000);
    expect((await t.engine.evaluate()).resolved).toEqual([]);
    expect(t.engine.openAlerts().map((a) => a.key)).toEqual(["no-ttl:L1"]);
    t.advance(1000);
    await t.engine.evaluate();
    expect(t.reads.open).toBe(3);
  });
});

describe("alertsChanged", () => {
  it("tells browsers the first alerts of a large evaluation and how many there were, not every one", async () => {
    const t = setup();
    t.setLocks(Array.from({ length: 300 }, (_, i) => ({ ...noTtl, id: `L${i}`, resource: `lock:${i}` })));
    const changes = await t.engine.evaluate();
    expect(changes.raised).toHaveLength(300);
    const message = alertsChanged(changes, 300);
    expect(message.raised.map((a) => a.id)).toEqual(changes.raised.slice(0, ALERTS_CHANGED_MAX).map((a) => a.id));
    expect(message).toMatchObject({ raisedCount: 300, resolvedCount: 0, resolved: [], open: 300 });
  });
});
