/**
 * The lock model shared by the agent, the dashboard server and the browser (types only on the browser side).
 * Field names follow ../shared/reference/api-contract.md; outside tools call them by these exact names.
 */

export type Backend = "redis" | "redlock" | "zookeeper";

export type Severity = "info" | "warning" | "critical";

/** A condition that makes a lock unsafe or suspicious, computed by the agent from what it observed. */
export interface Hazard {
  code: string;
  severity: Severity;
  message: string;
}

/** Holder details decoded from the lock's format (Redisson client id and thread, ShedLock host, ...). */
export type LockHolder = Record<string, string | number | boolean>;

export interface Waiter {
  owner: string;
  /** ISO time the waiter queued, when the format records it. */
  since?: string;
  detail?: string;
}

export interface Lock {
  /** Stable, URL-safe: derived from backend, source and the raw resource name. */
  id: string;
  backend: Backend;
  /** Which node, group or ensemble it was seen on, e.g. `redis://127.0.0.1:6379/0`. */
  source: string;
  /** The key or lock path as the application named it, escaped for display (see escapeBytes). */
  resource: string;
  /** Holder's token / field / node name, escaped; null when unknown. */
  owner: string | null;
  /** Recognised client library: "redisson", "node-redlock", ..., or "generic". */
  library: string;
  /** Which recogniser rule matched, so an operator can see why the library was chosen. */
  rule: string;
  /** Remaining lease in ms at the time of the answer; null when the lock never expires on its own. */
  ttlMs: number | null;
  holder: LockHolder | null;
  /** Queue order, empty when none are visible. */
  waiters: Waiter[];
  /** ISO time the agent first saw the current holder. */
  since: string;
  /** ISO time of the observation the fields above come from. */
  observedAt: string;
  /** Redis type of the key (string, hash, zset, ...) or the ZooKeeper node kind. */
  kind: string;
  /** Bounded, escaped preview of the stored value. */
  valuePreview: string | null;
  hazards: Hazard[];
  /** Which agent reported it. */
  agentId: string;
}

export type LockEventType =
  | "acquired"
  | "released"
  | "expired"
  | "renewed"
  | "owner-changed"
  | "lost"
  | "source-down"
  | "source-up";

/** One observed change. The id is assigned by the agent so that a replay is stored once. */
export interface LockEvent {
  id: string;
  agentId: string;
  type: LockEventType;
  lockId: string;
  backend: Backend;
  source: string;
  resource: string;
  owner: string | null;
  previousOwner?: string | null;
  library?: string;
  ttlMs?: number | null;
  /** ISO time the agent observed the change. */
  at: string;
  /** How the change was seen and type-specific facts (afterExpiry, heldMs, reason, ...). */
  detail?: Record<string, string | number | boolean | null>;
}

export interface SourceStatus {
  /** Same string as Lock.source. */
  id: string;
  kind: Backend;
  up: boolean;
  error?: string;
  /** Locks currently seen on the source. */
  locks: number;
  lastScanAt?: string;
  lastScanMs?: number;
  agentId: string;
}
