import { randomUUID } from "node:crypto";
import type { Lock } from "../../lib/contract/lock";
import type { ReleaseCommand } from "../../lib/contract/release";

/** The command a dashboard sends for `lock` as the operator saw it: its owner and its exact holding. */
export function releaseCommandFor(lock: Lock, dryRun: boolean, expectedOwner = lock.owner!): ReleaseCommand {
  return {
    requestId: randomUUID(),
    lockId: lock.id,
    expectedOwner,
    ...(lock.ownerFingerprint ? { expectedFingerprint: lock.ownerFingerprint } : {}),
    dryRun,
    actor: "test",
    reason: "test release",
  };
}
