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

/**
 * Sends due webhook deliveries from the database outbox, oldest first, one batch at a time. A delivery leaves the
 * outbox only on a 2xx answer; anything else is retried with backoff, across dashboard restarts.
 */
export class WebhookSender {
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(
    private readonly store: HistoryStore,
    private readonly log: (line: string) => void,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly timeoutMs = 5000,
  ) {}

  start(intervalMs = 1000): void {
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
  }

  async tick(): Promise<number> {
    if (this.busy) return 0;
    this.busy = true;
    let sent = 0;
    try {
      for (const d of await this.store.dueDeliveries(new Date(), 20)) {
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
