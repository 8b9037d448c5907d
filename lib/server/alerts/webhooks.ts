import type { AlertView } from "../../contract/alerts";
import type { HistoryStore, OutboxItem } from "../store";

export interface WebhookTarget {
  url: string;
  format: "json" | "slack";
}

/** ALERT_WEBHOOK_URLS entries: `https://...` (generic JSON) or `slack:https://...` (Slack-compatible body). */
export function parseWebhookTargets(entries: readonly string[]): WebhookTarget[] {
  return entries.map((e) =>
    e.startsWith("slack:") ? { url: e.slice(6), format: "slack" } : { url: e, format: "json" },
  );
}

export type AlertChange = "raised" | "resolved" | "acknowledged";

const ICON: Record<string, string> = {
  critical: ":rotating_light:",
  warning: ":warning:",
  info: ":information_source:",
};

export function webhookBody(
  target: WebhookTarget,
  change: AlertChange,
  a: AlertView,
  publicUrl: string | null,
): string {
  const link = publicUrl && a.lockId ? `${publicUrl}/locks/${a.lockId}` : publicUrl ? `${publicUrl}/alerts` : null;
  if (target.format === "slack") {
    const what = a.resource ? `\`${a.resource}\` on ${a.source}` : a.source;
    const verb =
      change === "raised" ? "" : change === "resolved" ? " — resolved" : ` — acknowledged by ${a.ackedBy ?? "?"}`;
    const icon = change === "resolved" ? ":white_check_mark:" : (ICON[a.severity] ?? "");
    return JSON.stringify({
      text: `${icon} [${a.severity}] ${a.rule}: ${what}${verb}\n${a.message}${link ? `\n<${link}|Open in lockscope>` : ""}`,
    });
  }
  return JSON.stringify({ event: `alert.${change}`, alert: a, link });
}

export function outboxFor(
  targets: readonly WebhookTarget[],
  change: AlertChange,
  a: AlertView,
  publicUrl: string | null,
): OutboxItem[] {
  return targets.map((t) => ({ url: t.url, kind: change, body: webhookBody(t, change, a, publicUrl) }));
}

/** Exponential backoff from 1 s, capped at 5 minutes: a receiver down for hours still gets everything. */
export function nextAttemptDelayMs(attempts: number): number {
  return Math.min(1000 * 2 ** Math.min(attempts, 20), 5 * 60_000);
}

export interface SenderOptions {
  /** Who claims the outbox rows (the dashboard's id); distinct per process. */
  owner?: string;
  /**
   * Whether this dashboard may send now (the leader's isLeader()): checked before each claim and again right before
   * each request, so a leader whose lease ran out (its process paused, Redis unreachable) stops before sending.
   */
  canSend?: () => boolean;
  /** How long a claim keeps other dashboards off a row; at least the request timeout plus a margin. */
  claimMs?: number;
  now?: () => number;
}

/**
 * Sends due webhook deliveries from the database outbox, oldest first, one batch at a time. A delivery leaves the
 * outbox only on a 2xx answer; anything else is retried with backoff, across dashboard restarts.
 *
 * Several dashboards share the outbox. Each row is claimed (one conditional UPDATE, see HistoryStore.claimDelivery)
 * before it is sent, so a new leader never sends a row whose request the old leader has in flight. The guarantee
 * is at-least-once, not exactly-once: a receiver that got the request but whose answer was lost (timeout, the
 * sender died before recording it) gets it again on the retry. Receivers that must not act twice deduplicate on
 * the body (the alert id and event).
 */
export class WebhookSender {
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private readonly owner: string;
  private readonly canSend: () => boolean;
  private readonly claimMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: HistoryStore,
    private readonly log: (line: string) => void,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly timeoutMs = 5000,
    opts: SenderOptions = {},
  ) {
    this.owner = opts.owner ?? `sender-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
    this.canSend = opts.canSend ?? (() => true);
    this.claimMs = Math.max(opts.claimMs ?? 0, timeoutMs * 2 + 5000);
    this.now = opts.now ?? Date.now;
  }

  start(intervalMs = 1000): void {
    if (this.timer) return;
    // A store that is briefly unreachable (a PostgreSQL restart) fails one tick; the next one retries. Never let
    // that rejection go unhandled: it would end the dashboard process.
    this.timer = setInterval(
      () =>
        void this.tick().catch((err: unknown) =>
          this.log(
            `webhook delivery paused: ${err instanceof Error ? err.message.trim().split("\n").pop() : String(err)}`,
          ),
        ),
      intervalMs,
    );
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async tick(): Promise<number> {
    if (this.busy || !this.canSend()) return 0;
    this.busy = true;
    let sent = 0;
    try {
      for (const d of await this.store.dueDeliveries(new Date(this.now()), 20)) {
        if (!this.canSend()) break;
        const claimedAt = this.now();
        const until = claimedAt + this.claimMs;
        if (!(await this.store.claimDelivery(d.id, this.owner, new Date(until), new Date(claimedAt)))) continue;
        // Re-checked after the claim's round trip: a process paused in between may have lost both the lease and
        // (past `until`) the claim. The request must end before the claim does: timeoutMs is well inside it.
        if (!this.canSend() || this.now() + this.timeoutMs >= until) {
          this.log(`webhook delivery of ${d.id} left for the next leader (lease or claim ran out before sending)`);
          break;
        }
        try {
          const res = await this.fetchImpl(d.url, {
            method: "POST",
            headers: { "content-type": "application/json", "user-agent": "lockscope-alerts" },
            body: d.body,
            signal: AbortSignal.timeout(this.timeoutMs),
          });
          if (res.ok) {
            await this.store.markDelivered(d.id, new Date());
            sent++;
          } else {
            await this.fail(d.id, d.attempts, `HTTP ${res.status}`);
          }
        } catch (err) {
          await this.fail(d.id, d.attempts, err instanceof Error ? err.message : String(err));
        }
      }
    } finally {
      this.busy = false;
    }
    return sent;
  }

  private async fail(id: string, attempts: number, error: string): Promise<void> {
    const delay = nextAttemptDelayMs(attempts);
    if (attempts === 0 || attempts % 10 === 0) this.log(`webhook delivery failed (${error}); retrying in ${delay} ms`);
    await this.store.markFailed(id, error, new Date(Date.now() + delay));
  }
}
