import type { Lock } from "@/lib/contract/lock";

/** Why a lock looks stale, in words an operator weighs before freeing it. Empty: nothing suggests it is. */
export function stalenessReasons(lock: Lock, heldMs: number): string[] {
  const reasons: string[] = [];
  // ZooKeeper and database locks live as long as their session by design: no TTL is not a reason there.
  if (lock.ttlMs === null && lock.backend !== "zookeeper" && !lock.database)
    reasons.push("it has no TTL: it will never expire on its own");
  for (const h of lock.hazards) if (h.code !== "no-ttl") reasons.push(h.message);
  if (lock.ttlMs !== null && heldMs > 10 * 60_000) reasons.push(`held for ${Math.round(heldMs / 60_000)} minutes`);
  if (lock.waiters.length > 0) reasons.push(`${lock.waiters.length} waiter(s) queue behind it`);
  return reasons;
}
