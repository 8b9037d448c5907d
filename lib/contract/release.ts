/** Force-release: the dashboard asks the agent that watches a lock to free it, guarded by the owner it saw. */
import type { Backend } from "./lock";

/**
 * The role a force-release needs, per backend. A database lock can only be freed by ending the holder's session
 * (its transaction rolled back, its other locks freed): far more destructive than a DEL, so admins only.
 */
export const RELEASE_ROLE: Record<Backend, "operator" | "admin"> = {
  redis: "operator",
  redlock: "operator",
  zookeeper: "operator",
  postgres: "admin",
  mysql: "admin",
};

export type ReleaseOutcome =
  /** Deleted: it still held the observed owner. */
  | "released"
  /** Already gone: nothing was deleted. */
  | "nothing-to-do"
  /** Someone else holds it now: nothing was deleted. */
  | "refused-owner-changed"
  /** Nothing deleted, as asked: the plan says what a real release would do. */
  | "dry-run"
  /** The format cannot be released safely, or the agent refused for another reason. */
  | "refused"
  /** The request was invalid (missing reason, wrong confirmation, rate limited, not authorised). */
  | "rejected"
  | "error";

export interface ReleaseNodeResult {
  node: string;
  outcome: ReleaseOutcome;
  detail?: string;
}

export interface ReleaseResult {
  outcome: ReleaseOutcome;
  message: string;
  /** Human-readable steps: what is (or would be) deleted where, and under which condition. */
  plan: string[];
  perNode: ReleaseNodeResult[];
}

/** Sent by the dashboard to the agent that reported the lock. */
export interface ReleaseCommand {
  requestId: string;
  lockId: string;
  /** The owner exactly as the operator saw it (escaped text as in Lock.owner). */
  expectedOwner: string;
  /** Lock.ownerFingerprint as the operator saw it: the exact holding the release is guarded by. */
  expectedFingerprint?: string;
  dryRun: boolean;
  actor: string;
  reason: string;
  /** Instead of releasing the lock: remove this dead waiter (as in Lock.waiters[].owner) from a fair lock's queue. */
  purgeWaiter?: string;
}

/** Body of POST /api/locks/:id/release. */
export interface ReleaseRequestBody {
  expectedOwner: string;
  /**
   * Lock.ownerFingerprint as the operator saw it. Required when the owner is shown shortened or the lock has a
   * fingerprint: the agent compares it with the exact holding, atomically where the backend allows.
   */
  expectedFingerprint?: string;
  reason: string;
  /** Default false. */
  dryRun?: boolean;
  /** Must equal the lock's resource for a real release: a typed confirmation. */
  confirm?: string;
  /** Remove this dead waiter from a Redisson fair lock's queue instead of releasing the lock. */
  purgeWaiter?: string;
  /**
   * Lock.since as the operator saw it: a lock released and taken again by a holder with the same name (a
   * re-created ZooKeeper node, a constant token) is a new holding, and is refused.
   */
  expectedSince?: string;
}

/** An audit row's outcome: a release attempt's, or "acknowledged" for an alert acknowledgement. */
export type AuditOutcome = ReleaseOutcome | "acknowledged";

/** An audit row: a force-release or purge-waiter attempt, or an alert acknowledgement ("acknowledge-alert"). */
export interface AuditEntryView {
  id: string;
  at: string;
  actor: string;
  role: string;
  via: string;
  action: string;
  lockId: string;
  backend: string | null;
  source: string | null;
  resource: string | null;
  observedOwner: string | null;
  reason: string;
  dryRun: boolean;
  outcome: AuditOutcome;
  message: string | null;
  perNode: ReleaseNodeResult[];
  clientAddress: string | null;
}
