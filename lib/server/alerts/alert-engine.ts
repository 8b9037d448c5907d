import type { AlertView } from "../../contract/alerts";
import type { LiveState } from "../live-state";
import type { HistoryStore } from "../store";
import { alertRefresh } from "./alert-refresh";
import { evaluateConditions, type AlertRulesConfig } from "./rules";
import { outboxFor, type WebhookTarget } from "./webhooks";

export interface AlertChanges {
  raised: AlertView[];
  resolved: AlertView[];
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
  ) {}

  /** Evaluates once; concurrent calls share one run. */
  evaluate(): Promise<AlertChanges> {
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  async acknowledge(id: string, by: string): Promise<AlertView | null> {
    const open = (await this.deps.store.openAlerts()).find((a) => a.id === id);
    if (!open) return null;
    const preview = { ...open, state: "acknowledged" as const, ackedBy: by, ackedAt: new Date().toISOString() };
    return this.deps.store.acknowledgeAlert(
      id,
      by,
      new Date(),
      outboxFor(this.deps.webhooks, "acknowledged", preview, this.deps.publicUrl),
    );
  }

  private async run(): Promise<AlertChanges> {
    const { live, store, rules, webhooks, publicUrl } = this.deps;
    const now = (this.deps.now ?? Date.now)();
    // The rules read hazards, holds and waiters, never the TTL: the stored locks, not 100,000 re-based copies.
    const conditions = evaluateConditions(live.rawLocks(), live.sources(), now, rules);
    const open = await store.openAlerts();
    const openKeys = new Map(open.map((a) => [a.key, a]));
    const active = new Set(conditions.map((c) => c.key));
    const changes: AlertChanges = { raised: [], resolved: [] };
    for (const c of conditions) {
      const already = openKeys.get(c.key);
      if (already) {
        // Still (or again) true: keep the message current (a flapping takeover names its latest holder) and count
        // a return after a clear spell as one more occurrence of this alert.
        const reappeared = this.clearSince.has(c.key);
        const holder = c.lockId ? (live.lock(c.lockId)?.owner ?? null) : null;
        const refresh = alertRefresh(already, c, holder, now, reappeared);
        if (refresh) await store.refreshAlert(already.id, refresh);
        continue;
      }
      const recent = c.lockId ? await store.listEvents({ lockId: c.lockId, limit: 10 }) : [];
      const evidence = {
        events: recent.map((e) => ({
          id: e.id,
          type: e.type,
          at: e.at,
          owner: e.owner,
          previousOwner: e.previousOwner ?? null,
        })),
        lock: c.lockId ? live.lock(c.lockId) : null,
      };
      const raisedAt = new Date(now);
      const alert = await store.raiseAlert({ ...c, evidence, raisedAt }, (id) =>
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
      );
      // Null: another dashboard's evaluation raised it first; the next run sees it open and refreshes it.
      if (alert) changes.raised.push(alert);
    }
    for (const a of open) {
      if (active.has(a.key)) {
        this.clearSince.delete(a.key);
        continue;
      }
      const since = this.clearSince.get(a.key) ?? now;
      this.clearSince.set(a.key, since);
      if (now - since < (this.deps.resolveAfterMs ?? 0)) continue;
      this.clearSince.delete(a.key);
      const resolvedAt = new Date(now);
      const done = await store.resolveAlert(
        a.id,
        resolvedAt,
        outboxFor(webhooks, "resolved", { ...a, state: "resolved", resolvedAt: resolvedAt.toISOString() }, publicUrl),
      );
      if (done) changes.resolved.push(done);
    }
    return changes;
  }
}
