import type { AlertView } from "../../contract/alerts";
import type { Condition } from "./rules";

/** How stale an open alert's "last seen" may get before it is written again: one write per alert per 15 s at most. */
export const LAST_SEEN_EVERY_MS = 15_000;

export interface AlertRefresh {
  message: string;
  severity: Condition["severity"];
  lastSeenAt: string;
  occurrences: number;
  /** The lock's holder now: a flapping takeover names its latest holder, not the one that first raised it. */
  latestHolder: string | null;
}

/**
 * What to write on an open alert whose condition holds again (pure), or null when nothing worth a write changed.
 * `reappeared`: the condition had cleared in an earlier evaluation and is back within the resolve grace, which is
 * one more occurrence of the same alert rather than a new one.
 */
export function alertRefresh(
  open: Pick<AlertView, "message" | "severity" | "lastSeenAt" | "occurrences" | "raisedAt" | "latestHolder">,
  c: Pick<Condition, "message" | "severity">,
  holder: string | null,
  nowMs: number,
  reappeared: boolean,
): AlertRefresh | null {
  const lastSeen = Date.parse(open.lastSeenAt ?? open.raisedAt);
  const changed =
    c.message !== open.message || c.severity !== open.severity || holder !== (open.latestHolder ?? null) || reappeared;
  if (!changed && nowMs - lastSeen < LAST_SEEN_EVERY_MS) return null;
  return {
    message: c.message,
    severity: c.severity,
    lastSeenAt: new Date(nowMs).toISOString(),
    occurrences: (open.occurrences ?? 1) + (reappeared ? 1 : 0),
    latestHolder: holder,
  };
}
