/**
 * Redisson's key and channel naming (RedissonObject.prefixName / suffixName). Companion keys carry the lock's name
 * in braces so that, in a Cluster, all keys of one lock hash to the same slot:
 *   prefixName("redisson_lock_queue", "order:1")  -> "redisson_lock_queue:{order:1}"
 *   prefixName("redisson_lock_queue", "{order}:1") -> "redisson_lock_queue:{order}:1"   (name already has a brace)
 *   suffixName("sem", "timeout")                   -> "{sem}:timeout"
 * The mapping is not one-to-one: the names `x` and `{x}` give the same companion keys. Reversing it we prefer the
 * brace-less name, which is what applications almost always use.
 */

export function prefixName(prefix: string, name: string): string {
  return name.includes("{") ? `${prefix}:${name}` : `${prefix}:{${name}}`;
}

export function suffixName(name: string, suffix: string): string {
  return name.includes("{") ? `${name}:${suffix}` : `{${name}}:${suffix}`;
}

/** The lock name inside a prefixName/suffixName part, or null when Redisson could not have written it. */
function unwrap(part: string): string | null {
  const m = /^\{([^{}]*)\}$/s.exec(part);
  if (m) return m[1]!;
  return part.includes("{") ? part : null;
}

export const LOCK_QUEUE = "redisson_lock_queue";
export const LOCK_TIMEOUT = "redisson_lock_timeout";
export const LOCK_CHANNEL = "redisson_lock__channel";
export const RWLOCK_CHANNEL = "redisson_rwlock";
export const SEMAPHORE_CHANNEL = "redisson_sc";
const UNLOCK_LATCH = "redisson_unlock_latch";

const RW_TIMEOUT_RE =
  /^(.+):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(-?[0-9]{1,19}):rwlock_timeout:([0-9]{1,10})$/s;
const LATCH_RE = /^(.+):[0-9a-f]{32}$/s;
const PERMIT_TIMEOUT_RE = /^\{([^{}]*)\}:timeout$/s;

/** Key of one read hold's lease: `{<name>}:<uuid>:<tid>:rwlock_timeout:<n>` (RedissonReadLock). */
export function rwTimeoutKey(name: string, holderField: string, n: number): string {
  return `${suffixName(name, holderField)}:rwlock_timeout:${n}`;
}

/** RPermitExpirableSemaphore keeps its leased permits in `{<name>}:timeout` (a zset). */
export function permitTimeoutKey(name: string): string {
  return suffixName(name, "timeout");
}

/**
 * For a key that only exists as part of another Redisson lock, that lock's name; null for anything else.
 *   redisson_lock_queue:{x}, redisson_lock_timeout:{x}          fair-lock queue and waiter deadlines
 *   {x}:<uuid>:<tid>:rwlock_timeout:<n>                          one read hold's lease
 *   redisson_unlock_latch:{x}:<32 hex>                           short-lived marker written by unlock
 *   {x}:timeout                                                   leased permits of a permit-expirable semaphore
 */
export function redissonCompanionOwner(keyText: string): string | null {
  for (const prefix of [LOCK_QUEUE, LOCK_TIMEOUT]) {
    if (keyText.startsWith(`${prefix}:`)) return unwrap(keyText.slice(prefix.length + 1));
  }
  if (keyText.startsWith(`${UNLOCK_LATCH}:`)) {
    const m = LATCH_RE.exec(keyText.slice(UNLOCK_LATCH.length + 1));
    return m ? unwrap(m[1]!) : null;
  }
  const rw = RW_TIMEOUT_RE.exec(keyText);
  if (rw) return unwrap(rw[1]!);
  // Only the braced form: `<name-with-brace>:timeout` is too common a shape among application keys to claim.
  const pt = PERMIT_TIMEOUT_RE.exec(keyText);
  return pt ? pt[1]! : null;
}
