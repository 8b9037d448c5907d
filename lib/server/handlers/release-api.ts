import { randomUUID } from "node:crypto";
import type { Lock } from "../../contract/lock";
import { RELEASE_ROLE, type ReleaseRequestBody, type ReleaseResult } from "../../contract/release";
import type { NewAuditEntry } from "../store";
import { LOCK_ID } from "./read-api";
import { fail, requireRole, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

const MAX_REASON = 1000;

/**
 * POST /api/locks/:id/release: the one write lockscope makes. Operators only; CSRF-checked for browsers; rate
 * limited per actor; a reason always, and a typed confirmation of the resource name unless it is a dry run. The agent
 * deletes only if the lock still has the owner the operator saw. Every attempt is audited, refused ones included.
 */
export async function releaseLock(req: ApiRequest, deps: ApiDeps, lockId: string): Promise<ApiAnswer> {
  const denied = requireRole(req, "operator");
  if (denied) return denied;
  const principal = req.principal!;
  const csrf = deps.auth.checkCsrf(principal, req.headers);
  if (csrf) return fail(403, `CSRF check failed: ${csrf}`);
  if (!LOCK_ID.test(lockId)) return fail(400, "lock id must be URL-safe (A-Z a-z 0-9 _ -)");

  let body: ReleaseRequestBody;
  try {
    body = (await req.json()) as ReleaseRequestBody;
  } catch (err) {
    return fail(400, err instanceof Error ? err.message : "invalid JSON body");
  }
  const lock = deps.live.lock(lockId);
  const dryRun = body?.dryRun === true;
  const purgeWaiter = typeof body?.purgeWaiter === "string" ? body.purgeWaiter : undefined;
  const audit = async (result: ReleaseResult, observedOwner: string | null): Promise<void> => {
    const entry: NewAuditEntry = {
      actor: principal.name,
      role: principal.role,
      via: principal.via,
      action: purgeWaiter !== undefined ? "purge-waiter" : "force-release",
      lockId,
      backend: lock?.backend ?? null,
      source: lock?.source ?? null,
      resource: lock?.resource ?? null,
      observedOwner,
      reason: typeof body?.reason === "string" ? body.reason.slice(0, MAX_REASON) : "",
      dryRun,
      outcome: result.outcome,
      message: result.message,
      perNode: result.perNode,
      clientAddress: req.clientAddress,
    };
    await deps.store.addAudit(entry);
  };
  const reject = async (status: number, message: string, headers?: Record<string, string>): Promise<ApiAnswer> => {
    const result: ReleaseResult = { outcome: "rejected", message, plan: [], perNode: [] };
    await audit(result, typeof body?.expectedOwner === "string" ? body.expectedOwner.slice(0, 4096) : null);
    return { status, body: result, headers };
  };

  const wait = deps.releaseLimiter.take(principal.name);
  if (wait > 0) {
    return reject(429, "too many release attempts; wait before trying again", {
      "retry-after": String(Math.ceil(wait / 1000)),
    });
  }
  if (typeof body?.expectedOwner !== "string" || body.expectedOwner === "") {
    return reject(400, "expectedOwner is required: the owner you saw, so a lock taken since is never freed");
  }
  if (typeof body.reason !== "string" || body.reason.trim().length < 3) return reject(400, "a reason is required");
  if (body.reason.length > MAX_REASON) return reject(400, `the reason must be at most ${MAX_REASON} characters`);
  if (!lock) {
    const result: ReleaseResult = {
      outcome: "nothing-to-do",
      message: "the lock is not held any more",
      plan: [],
      perNode: [],
    };
    await audit(result, body.expectedOwner);
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
  if (body.expectedFingerprint !== undefined && typeof body.expectedFingerprint !== "string") {
    return reject(400, "expectedFingerprint must be a string: the lock's ownerFingerprint as you saw it");
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
    await audit(result, body.expectedOwner);
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
  await audit(result, body.expectedOwner);
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
