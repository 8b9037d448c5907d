import { formatDuration } from "./format";

/**
 * What the TTL cell and the detail page say about a lease, from the remaining time the browser computes. Pure.
 * A lease that reached 0 is not "held" any more as far as anyone can tell, but not confirmed gone either: the
 * agent's next read (or the server's expiry notice) decides, so it says exactly that.
 */
export type LeaseView =
  | { kind: "no-ttl"; label: "no TTL" }
  | { kind: "ended"; label: "lease ended, confirming…" }
  | { kind: "counting"; label: string; pct: number; tone: "critical" | "warning" | "ok" };

export const LEASE_ENDED_LABEL = "lease ended, confirming…";

export function leaseView(remaining: number | null, total: number | null): LeaseView {
  if (remaining === null) return { kind: "no-ttl", label: "no TTL" };
  if (remaining <= 0) return { kind: "ended", label: LEASE_ENDED_LABEL };
  const pct = total && total > 0 ? Math.min(100, (remaining / total) * 100) : 0;
  const tone = remaining < 1000 ? "critical" : pct < 25 ? "warning" : "ok";
  return { kind: "counting", label: formatDuration(remaining), pct, tone };
}

/** The detail page's status badge: held, its lease ended (awaiting confirmation), or how it stopped being held. */
export function holdStatus(
  present: boolean,
  remaining: number | null,
  lastEventType: string | null,
): { label: string; tone: "held" | "ended" | "gone" } {
  if (present) {
    return remaining !== null && remaining <= 0
      ? { label: LEASE_ENDED_LABEL, tone: "ended" }
      : { label: "held", tone: "held" };
  }
  return { label: lastEventType ? `not held (${lastEventType})` : "unknown", tone: "gone" };
}
