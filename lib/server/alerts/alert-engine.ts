import type { AlertView } from "../../contract/alerts";
import { ALERTS_CHANGED_MAX, type ServerToUiEvents } from "../../contract/socket";
import type { LiveState } from "../live-state";
import { openAlertStateOf, type HistoryStore, type OpenAlertState } from "../store";
import { alertRefresh, type AlertRefresh } from "./alert-refresh";
import { LiveConditions, slicer, yieldToLoop } from "./live-conditions";
import type { AlertRulesConfig, Condition } from "./rules";
import { outboxFor, type WebhookTarget } from "./webhooks";

export interface AlertChanges {
  raised: AlertView[];
  resolved: AlertView[];
}

/**
 * What browsers are told of one evaluation's changes: the first few of each kind and how many in all, not all of
 * them. 1,000 alerts raised by one evaluation were one 0.5 MB message, serialised and scanned for binaries on the
 * event loop in one go (about 0.5 s in a CPU profile at 100,000 locks), for a banner that shows five; the alerts page
 * reads the rest from the API.
 */
export function alertsChanged(changes: AlertChanges, open: number): Parameters<ServerToUiEvents["alerts:changed"]>[0] {
  return {
    raised: changes.raised.slice(0, ALERTS_CHANGED_MAX),
    resolved: changes.resolved.slice(0, ALERTS_CHANGED_MAX),
    raisedCount: changes.raised.length,
    resolvedCount: changes.resolved.length,
    open,
  };
}

/**
 * Keeps stored alerts in step with the conditions that hold now: one open alert per rule and lock (or source),
 * raised with its evidence when the condition appears, resolved automatically when it clears. Every change queues
 * its webhooks in the same transaction.
 */
export class AlertEngine {
  private running: Promise<AlertChanges> | null = null;
  /** When each open alert's condition was last seen clear (alert key -> ms), for the resolve grace. */
  private readonly clearSince = new Map<string, number>();
  /**
   * The unresolved alerts by key, as the store held them at the last full read plus this engine's own writes since
   * (raises, refreshes, resolves, acknowledgements). Read again in full every OPEN_RESYNC_MS, and at the next run
   * after a write found the store other than this copy says (another dashboard raised or resolved it first) or
   * failed.
   */
  private open = new Map<string, OpenAlertState>();
  private openReadAtMs = Number.NEGATIVE_INFINITY;
  private openStale = true;
  /** The conditions, kept between runs: each run re-evaluates only the locks that changed or move with time. */
  private readonly conditions: LiveConditions;

  constructor(
    private readonly deps: {
      live: LiveState;
      store: HistoryStore;
      rules: AlertRulesConfig;
      webhooks: readonly WebhookTarget[];
      publicUrl: string | null;
      /** An alert resolves only after its condition has stayed clear this long, so a flapping lock is one alert. */
      resolveAfterMs?: number;
      now?: () => number;
    },
  ) {
    this.conditions = new LiveConditions(deps.live, deps.rules);
  }

  /** Evaluates once; concurrent calls share one run. */
  evaluate(): Promise<AlertChanges> {
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  /**
   * The open and acknowledged alerts after the last run, without another read of the store (1,000 open alerts are a
   * 10 to 20 ms read on SQLite, during which the event loop does nothing else). An acknowledgement made during the
   * run shows from the next one.
   */
  openAlerts(): readonly OpenAlertState[] {
    return [...this.open.values()];
  }

  async acknowledge(id: string, by: string): Promise<AlertView | null> {
    const open = await this.deps.store.findAlert(id);
    if (!open || open.state === "resolved") return null;
    const preview = { ...open, state: "acknowledged" as const, ackedBy: by, ackedAt: new Date().toISOString() };
    const acked = await this.deps.store.acknowledgeAlert(
      id,
      by,
      new Date(),
      outboxFor(this.deps.webhooks, "acknowledged", preview, this.deps.publicUrl),
    );
    const kept = this.open.get(open.key);
    if (acked && kept?.id === id) this.open.set(open.key, { ...kept, state: acked.state });
    return acked;
  }

  /**
   * The unresolved alerts: the copy kept between runs, read from the store in full when it is due. At 100,000 locks
   * and thousands of open alerts that read held the dashboard's event loop for 100 to 200 ms every evaluation (a
   * CPU profile of the bench's dashboard, issue 11), which is where a lock event's delivery waited.
   */
  private async openAlertStates(now: number): Promise<OpenAlertState[]> {
    if (this.openStale || now - this.openReadAtMs >= OPEN_RESYNC_MS) {
      const rows = await this.deps.store.openAlertStates();
      this.open = new Map(rows.map((a) => [a.key, a]));
      this.openReadAtMs = now;
      this.openStale = false;
    }
    return [...this.open.values()];
  }

  private async run(): Promise<AlertChanges> {
    const { live, store, webhooks, publicUrl } = this.deps;
    const now = (this.deps.now ?? Date.now)();
    // The store's answers on SQLite come through microtasks only: without a turn of the event loop after each write,
    // a run that refreshes 1,000 alerts held it for a second (a browser's delivery waited behind it).
    const conditions = await this.conditions.evaluate(now);
    const open = await this.openAlertStates(now);
    // A write that throws leaves the copy unsure: the next run reads the store again.
    this.openStale = true;
    const openKeys = new Map(open.map((a) => [a.key, a]));
    const active = new Set(conditions.map((c) => c.key));
    const changes: AlertChanges = { raised: [], resolved: [] };
    let resync = false;
    const refreshes: Array<{ id: string; key: string; refresh: AlertRefresh }> = [];
    const toRaise: Condition[] = [];
    const slice = slicer();
    for (const c of conditions) {
      const pause = slice.due();
      if (pause) await pause;
      const already = openKeys.get(c.key);
      if (!already) {
        toRaise.push(c);
        continue;
      }
      // Still (or again) true: keep the message current (a flapping takeover names its latest holder) and count a
      // return after a clear spell as one more occurrence of this alert.
      const reappeared = this.clearSince.has(c.key);
      const holder = c.lockId ? live.ownerOf(c.lockId) : null;
      const refresh = alertRefresh(already, c, holder, now, reappeared);
      if (refresh) refreshes.push({ id: already.id, key: c.key, refresh });
    }
    // Written in batches, a turn of the event loop after each: one statement (SQLite) for a batch of refreshes, one
    // read of the locks' recent events and one transaction for a batch of raises, instead of one of each per alert.
    for (let i = 0; i < refreshes.length; i += ALERT_WRITE_BATCH) {
      const batch = refreshes.slice(i, i + ALERT_WRITE_BATCH);
      await store.refreshAlerts(batch.map(({ id, refresh }) => ({ id, refresh })));
      for (const { key, refresh } of batch) {
        const kept = this.open.get(key);
        if (kept) this.open.set(key, { ...kept, ...refresh });
      }
      await yieldToLoop();
    }
    const raisedAt = new Date(now);
    for (let i = 0; i < toRaise.length; i += ALERT_WRITE_BATCH) {
      const batch = toRaise.slice(i, i + ALERT_WRITE_BATCH);
      const recent = await store.recentEvents(
        batch.flatMap((c) => (c.lockId ? [c.lockId] : [])),
        EVIDENCE_EVENTS,
      );
      const items = batch.map((c) => {
        const evidence = {
          events: (c.lockId ? (recent.get(c.lockId) ?? []) : []).map((e) => ({
            id: e.id,
            type: e.type,
            at: e.at,
            owner: e.owner,
            previousOwner: e.previousOwner ?? null,
          })),
          lock: c.lockId ? live.lock(c.lockId) : null,
        };
        return {
          alert: { ...c, evidence, raisedAt },
          outbox: (id: string) =>
            outboxFor(
              webhooks,
              "raised",
              {
                ...c,
                id,
                state: "open",
                evidence,
                raisedAt: raisedAt.toISOString(),
                ackedAt: null,
                ackedBy: null,
                resolvedAt: null,
              },
              publicUrl,
            ),
        };
      });
      // Null: another dashboard's evaluation raised it first; the next run reads it and refreshes it.
      for (const alert of await store.raiseAlerts(items)) {
        if (!alert) {
          resync = true;
          continue;
        }
        changes.raised.push(alert);
        this.open.set(alert.key, openAlertStateOf(alert));
      }
      await yieldToLoop();
    }
    for (const a of open) {
      const pause = slice.due();
      if (pause) await pause;
      if (active.has(a.key)) {
        this.clearSince.delete(a.key);
        continue;
      }
      const since = this.clearSince.get(a.key) ?? now;
      this.clearSince.set(a.key, since);
      if (now - since < (this.deps.resolveAfterMs ?? 0)) continue;
      this.clearSince.delete(a.key);
      const resolvedAt = new Date(now);
      // The webhook carries the whole alert, evidence included, which the evaluation does not read.
      const full = webhooks.length > 0 ? await store.findAlert(a.id) : null;
      const done = await store.resolveAlert(
        a.id,
        resolvedAt,
        outboxFor(
          webhooks,
          "resolved",
          {
            ...(full ?? { ...a, evidence: {}, ackedAt: null, ackedBy: null }),
            state: "resolved",
            resolvedAt: resolvedAt.toISOString(),
          },
          publicUrl,
        ),
      );
      // Null: it was resolved elsewhere first (another dashboard); gone from the copy either way.
      if (done) changes.resolved.push(done);
      else resync = true;
      if (this.open.get(a.key)?.id === a.id) this.open.delete(a.key);
      await yieldToLoop();
    }
    this.openStale = resync;
    return changes;
  }
}

/**
 * How often the kept copy of the unresolved alerts is read from the store in full: what another dashboard or an
 * operator on another dashboard changed (an acknowledgement) shows here within this time.
 */
const OPEN_RESYNC_MS = 30_000;
/** Alerts written per statement or transaction (refreshes, raises). */
const ALERT_WRITE_BATCH = 500;
/** The lock's recent events kept in a raised alert's evidence. */
const EVIDENCE_EVENTS = 10;
