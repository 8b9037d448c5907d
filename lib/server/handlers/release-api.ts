import { randomUUID } from "node:crypto";
import type { Lock } from "../../contract/lock";
import { RELEASE_ROLE, type ReleaseResult } from "../../contract/release";
import { checkBody, MAX_RELEASE_REASON, releaseRequestSchema } from "../../contract/requests";
import type { NewAuditEntry } from "../store";
import { LOCK_ID } from "./read-api";
import { fail, requireRole, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

/** Longest lock id, owner and message kept in an audit row of a refused attempt (the request may be hostile). */
const AUDIT_ID_CHARS = 200;
const AUDIT_TEXT_CHARS = 4096;

/** What the audit row can say about a body that may be invalid: only fields of the right type are taken. */
function auditFields(raw: unknown): { owner: string | null; reason: string; dryRun: boolean; purge: boolean } {
  const b = raw !== null && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  return {
    owner: typeof b.expectedOwner === "string" ? b.expectedOwner.slice(0, AUDIT_TEXT_CHARS) : null,
    reason: typeof b.reason === "string" ? b.reason.slice(0, MAX_RELEASE_REASON) : "",
    dryRun: b.dryRun === true,
    purge: typeof b.purgeWaiter === "string",
  };
}

/**
 * POST /api/locks/:id/release: the one write lockscope makes. Operators only; CSRF-checked for browsers; rate
 * limited per actor; a reason always, and a typed confirmation of the resource name unless it is a dry run. The agent
 * deletes only if the lock still has the owner the operator saw. Every attempt by a known actor is audited: refused
 * for role or CSRF, a bad id, a bad body, rate limited, dry runs and real releases alike.
 */
export async function releaseLock(req: ApiRequest, deps: ApiDeps, lockId: string): Promise<ApiAnswer> {
  // A request without valid credentials is not audited: it has no actor to record, and writing a row for each would
  // let anyone who can reach the port grow the audit table without limit and bury the real entries. Nothing is done
  // for it, and the answer is a plain 401.
  if (!req.principal) return requireRole(req, "operator")!;
  const principal = req.principal;
  const validId = LOCK_ID.test(lockId);
  const lock = validId ? deps.live.lock(lockId) : undefined;
  let raw: unknown = undefined;

  const audit = async (result: ReleaseResult): Promise<void> => {
    const f = auditFields(raw);
    const entry: NewAuditEntry = {
      actor: principal.name,
      role: principal.role,
      via: principal.via,
      action: f.purge ? "purge-waiter" : "force-release",
      lockId: lockId.slice(0, AUDIT_ID_CHARS),
      backend: lock?.backend ?? null,
      source: lock?.source ?? null,
      resource: lock?.resource ?? null,
      observedOwner: f.owner,
      reason: f.reason,
      dryRun: f.dryRun,
      outcome: result.outcome,
      message: result.message.slice(0, AUDIT_TEXT_CHARS),
      perNode: result.perNode,
      clientAddress: req.clientAddress,
    };
    await deps.store.addAudit(entry);
  };
  /** Refused before anything reached the agent: audited, answered with `{ error }` like other refusals. */
  const refuse = async (answer: ApiAnswer): Promise<ApiAnswer> => {
    const error = (answer.body as { error: string }).error;
    await audit({ outcome: "rejected", message: error, plan: [], perNode: [] });
    return answer;
  };
  const reject = async (status: number, message: string, headers?: Record<string, string>): Promise<ApiAnswer> => {
    const result: ReleaseResult = { outcome: "rejected", message, plan: [], perNode: [] };
    await audit(result);
    return { status, body: result, headers };
  };

  // The body is read before any refusal, so the audit row says what was attempted (owner, reason, dry run).
  let bodyError: unknown = null;
  try {
    raw = await req.json();
  } catch (err) {
    bodyError = err ?? new Error("invalid JSON body");
  }
  const denied = requireRole(req, "operator");
  if (denied) return refuse(denied);
  const csrf = deps.auth.checkCsrf(principal, req.headers);
  if (csrf) return refuse(fail(403, `CSRF check failed: ${csrf}`));
  if (!validId) return refuse(fail(400, "lock id must be URL-safe (A-Z a-z 0-9 _ -)"));
  if (bodyError !== null) {
    // Audited, then answered by the HTTP layer as for any route (400 for bad JSON, 413 for a body over the limit).
    await audit({
      outcome: "rejected",
      message: bodyError instanceof Error ? bodyError.message : String(bodyError),
      plan: [],
      perNode: [],
    });
    throw bodyError;
  }
  const wait = deps.releaseLimiter.take(principal.name);
  if (wait > 0) {
    return reject(429, "too many release attempts; wait before trying again", {
      "retry-after": String(Math.ceil(wait / 1000)),
    });
  }
  // Every field with the right type, or nothing happens: `"dryRun": "true"` must never be taken for a real release.
  const checked = checkBody(releaseRequestSchema, raw);
  if (!checked.ok) return reject(400, checked.error);
  const body = checked.value;
  const dryRun = body.dryRun === true;
  const purgeWaiter = body.purgeWaiter;

  if (!lock) {
    const result: ReleaseResult = {
      outcome: "nothing-to-do",
      message: "the lock is not held any more",
      plan: [],
      perNode: [],
    };
    await audit(result);
    return { status: 200, body: result };
  }
  if (RELEASE_ROLE[lock.backend] === "admin" && principal.role !== "admin") {
    return reject(403, `releasing a ${lock.backend} lock ends the holder's database session: this needs admin`);
  }
  if (!dryRun && body.confirm !== lock.resource) {
    return reject(400, "type the resource name exactly to confirm a real release");
  }
  if (purgeWaiter !== undefined && !lock.waiters.some((w) => w.owner === purgeWaiter)) {
    return reject(400, "purgeWaiter is not a queued waiter of this lock");
  }
  // The guard is the exact holding the operator saw, never the owner's display text (cut at 128 characters, so two
  // holders can look the same). Without the fingerprint, the holding seen is pinned by `since`: the agent reports a
  // new holding (a different fingerprint) with a new `since`.
  const expectedFingerprint =
    body.expectedFingerprint ?? (body.expectedSince !== undefined ? lock.ownerFingerprint : undefined);
  const sameHolding = body.expectedSince === undefined || body.expectedSince === lock.since;
  const sameFingerprint = expectedFingerprint === undefined || expectedFingerprint === lock.ownerFingerprint;
  if (lock.owner !== body.expectedOwner || !sameHolding || !sameFingerprint) {
    const result: ReleaseResult = {
      outcome: "refused-owner-changed",
      message:
        lock.owner !== body.expectedOwner
          ? `the owner is now ${lock.owner ?? "unknown"}: nothing was deleted`
          : !sameHolding
            ? `the lock was released and taken again (since ${lock.since}) after you looked: nothing was deleted`
            : "the lock is held by another holding with the same owner text since you looked: nothing was deleted",
      plan: [],
      perNode: [],
    };
    await audit(result);
    return { status: 409, body: result };
  }
  if (
    !dryRun &&
    purgeWaiter === undefined &&
    lock.ownerFingerprint !== undefined &&
    expectedFingerprint === undefined
  ) {
    return reject(
      400,
      "expectedFingerprint (the lock's ownerFingerprint) or expectedSince is required for a real release: the owner text alone does not name one holding",
    );
  }
  const result = await deps.agents.release(lock.agentId, {
    requestId: randomUUID(),
    lockId,
    expectedOwner: body.expectedOwner,
    ...(expectedFingerprint !== undefined ? { expectedFingerprint } : {}),
    dryRun,
    actor: principal.name,
    reason: body.reason,
    ...(purgeWaiter !== undefined ? { purgeWaiter } : {}),
  });
  await audit(result);
  return { status: statusFor(result, lock), body: result };
}

function statusFor(result: ReleaseResult, _lock: Lock): number {
  switch (result.outcome) {
    case "refused-owner-changed":
      return 409;
    case "refused":
      return 422;
    case "error":
      return 502;
    default:
      return 200;
  }
}

/** `/api/locks/<id>/release`: the lock id of a release path, or null for any other path. */
export function releasePathLockId(pathname: string): string | null {
  const m = /^\/api\/locks\/([^/]+)\/release\/?$/.exec(pathname);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return m[1]!;
  }
}

/**
 * A release attempt refused at the HTTP entrance, before its body was read (not JSON: 415; over the size limit:
 * 413). It reached the release endpoint with an identifiable actor, so it is audited like any other refusal.
 */
export async function auditRefusedReleaseBody(
  deps: Pick<ApiDeps, "store" | "live">,
  req: Pick<ApiRequest, "principal" | "clientAddress">,
  lockId: string,
  message: string,
): Promise<void> {
  if (!req.principal) return; // no actor: answered 401-free refusals are not audited (see releaseLock)
  const lock = LOCK_ID.test(lockId) ? deps.live.lock(lockId) : undefined;
  await deps.store.addAudit({
    actor: req.principal.name,
    role: req.principal.role,
    via: req.principal.via,
    action: "force-release",
    lockId: lockId.slice(0, AUDIT_ID_CHARS),
    backend: lock?.backend ?? null,
    source: lock?.source ?? null,
    resource: lock?.resource ?? null,
    observedOwner: null,
    reason: "",
    dryRun: false,
    outcome: "rejected",
    message: message.slice(0, AUDIT_TEXT_CHARS),
    perNode: [],
    clientAddress: req.clientAddress,
  });
}
