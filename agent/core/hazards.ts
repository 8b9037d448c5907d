import type { Hazard, Lock } from "../../lib/contract/lock";

/**
 * Hazards that follow from one observation alone. Hazards that need history (renewals that stopped, expired while
 * held) are raised by the tracker from consecutive observations.
 */
export function staticHazards(
  lock: Pick<Lock, "backend" | "ttlMs" | "kind">,
  opts: { ttlByDesign?: boolean } = {},
): Hazard[] {
  const hazards: Hazard[] = [];
  if (lock.backend === "redis" && lock.ttlMs === null && !opts.ttlByDesign) {
    hazards.push({
      code: "no-ttl",
      severity: "critical",
      message:
        "Never expires: no TTL (SETNX without an atomic EXPIRE, or a crash between them). Only a release frees it.",
    });
  }
  return hazards;
}
