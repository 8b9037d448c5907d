import type { AlertState, AlertView } from "@/lib/contract/alerts";
import type { Severity } from "@/lib/contract/lock";

/** The alerts page's filters; "" means any. */
export interface AlertFilter {
  state: AlertState | "";
  rule: string;
  severity: Severity | "";
}

export const NO_FILTER: AlertFilter = { state: "", rule: "", severity: "" };

export function filterAlerts(alerts: readonly AlertView[], f: AlertFilter): AlertView[] {
  return alerts.filter(
    (a) =>
      (!f.state || a.state === f.state) && (!f.rule || a.rule === f.rule) && (!f.severity || a.severity === f.severity),
  );
}

/** The rules present, sorted, each with how many alerts it has: the rule filter offers only what exists. */
export function ruleOptions(alerts: readonly AlertView[]): { rule: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const a of alerts) counts.set(a.rule, (counts.get(a.rule) ?? 0) + 1);
  return [...counts].map(([rule, count]) => ({ rule, count })).sort((a, b) => a.rule.localeCompare(b.rule));
}

interface EvidenceEvent {
  type?: unknown;
  at?: unknown;
  owner?: unknown;
  previousOwner?: unknown;
}

/**
 * The evidence an alert was raised on, as lines a person reads: the lock's recent events (newest first) and the
 * holder at the time. Defensive: evidence is stored JSON and may be from an older version.
 */
export function evidenceLines(evidence: Record<string, unknown>, formatAt: (at: string) => string): string[] {
  const lines: string[] = [];
  const lock = evidence.lock as { owner?: unknown; ttlMs?: unknown } | null | undefined;
  if (lock && typeof lock === "object") {
    const owner = typeof lock.owner === "string" ? lock.owner : "unknown";
    const ttl = typeof lock.ttlMs === "number" ? `${Math.round(lock.ttlMs / 100) / 10} s left` : "no TTL";
    lines.push(`When raised: held by ${owner}, ${ttl}`);
  }
  const events = Array.isArray(evidence.events) ? (evidence.events as EvidenceEvent[]) : [];
  for (const e of events.slice(0, 10)) {
    if (!e || typeof e !== "object" || typeof e.type !== "string" || typeof e.at !== "string") continue;
    const who =
      e.type === "owner-changed" && typeof e.previousOwner === "string"
        ? ` ${e.previousOwner} → ${typeof e.owner === "string" ? e.owner : "?"}`
        : typeof e.owner === "string"
          ? ` ${e.owner}`
          : "";
    lines.push(`${formatAt(e.at)} ${e.type}${who}`);
  }
  return lines;
}

/** The alerts table's sortable columns; with no sort chosen the server's order stands (open first, newest first). */
export type AlertSortKey = "severity" | "raised" | "lastSeen" | "occurrences";

const SEVERITY_RANK = { critical: 2, warning: 1, info: 0 } as const;

export function sortAlerts(
  alerts: readonly AlertView[],
  sort: { key: string; desc: boolean } | undefined,
): AlertView[] {
  if (!sort) return [...alerts];
  const value = (a: AlertView): number => {
    if (sort.key === "severity") return SEVERITY_RANK[a.severity];
    if (sort.key === "occurrences") return a.occurrences ?? 1;
    if (sort.key === "lastSeen") return Date.parse(a.lastSeenAt ?? a.raisedAt);
    return Date.parse(a.raisedAt);
  };
  return [...alerts].sort((x, y) => (sort.desc ? value(y) - value(x) : value(x) - value(y)));
}
