/** Alerts and contention history, as the API and the browser see them. */
import type { Backend, Severity } from "./lock";

export type AlertState = "open" | "acknowledged" | "resolved";

export interface AlertView {
  id: string;
  key: string;
  rule: string;
  severity: Severity;
  state: AlertState;
  lockId: string | null;
  backend: Backend | null;
  source: string;
  resource: string | null;
  message: string;
  /** Recent events and facts at the time it was raised. */
  evidence: Record<string, unknown>;
  raisedAt: string;
  ackedAt: string | null;
  ackedBy: string | null;
  resolvedAt: string | null;
  /** When the condition was last seen holding (to within 15 s); the raise time until then. */
  lastSeenAt?: string;
  /** How many times the condition appeared while this alert stayed open (a flapping lock is one alert). */
  occurrences?: number;
  /** The lock's holder when the condition was last seen (the first evidence names the one that raised it). */
  latestHolder?: string | null;
}

export interface AlertsResponse {
  alerts: AlertView[];
  open: number;
}

export interface Distribution {
  count: number;
  p50: number | null;
  p95: number | null;
  max: number | null;
  /** Counts per bucket; `leMs` is the bucket's upper bound. */
  histogram: Array<{ leMs: number; count: number }>;
}

export interface ResourceHistory {
  resource: string;
  windowMs: number;
  /** Per time bucket: acquisitions, owner changes, expiries. */
  buckets: Array<{ t: string; acquisitions: number; ownerChanges: number; expiries: number }>;
  hold: Distribution;
  wait: Distribution;
  /** Holdings in time order: who held it from when to when, and how it ended (the latest 200). */
  timeline: Array<{
    owner: string | null;
    from: string;
    to: string | null;
    end: string | null;
    /** For an `owner-changed` end: true when the new owner came after this holding's lease had run out. */
    takenOver?: boolean;
  }>;
  /** How many holdings the window had, `timeline` lists the latest of them. */
  timelineTotal?: number;
}

/** What the History page ranks by: contention (acquisitions and takeovers), or what hurts. */
export const RANK_BY = ["contention", "wait", "waiters", "takeovers", "no-ttl"] as const;
export type RankBy = (typeof RANK_BY)[number];

export interface TopContended {
  windowMs: number;
  /** The ranking used (contention when none was asked). */
  by?: RankBy;
  resources: Array<{
    resource: string;
    backend: string;
    lockId: string;
    acquisitions: number;
    ownerChanges: number;
    expiries: number;
    holdAvgMs: number | null;
    holdMaxMs: number | null;
    /** Total and longest time contenders waited before acquiring (where the backend shows queues). */
    waitMsTotal?: number;
    waitMsMax?: number | null;
    /** Acquisitions that had queued first: how many contenders had to wait. */
    waited?: number;
    /** Time held without any TTL in the window (held forever unless someone releases it). */
    noTtlMs?: number;
  }>;
  /** The whole fleet per hour (from the rollups): contention over time, not only a top list. */
  hours?: Array<{ t: string; acquisitions: number; ownerChanges: number; expiries: number }>;
}
