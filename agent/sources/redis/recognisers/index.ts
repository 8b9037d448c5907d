import type { KeySample } from "../redis-port";
import { bsmRedislock } from "./bsm-redislock";
import { genericAny, genericHash, genericString, genericZset } from "./generic";
import { goRedsync } from "./go-redsync";
import { nodeRedlock } from "./node-redlock";
import { pottery } from "./pottery";
import { redisPyLock } from "./redis-py";
import { redisSemaphoreMutex, redisSemaphoreSemaphore } from "./redis-semaphore";
import { parseRedissonField, redissonLock, redissonReadWriteLock, rwTimeoutKeys } from "./redisson";
import { LOCK_QUEUE, LOCK_TIMEOUT, permitTimeoutKey, prefixName, redissonCompanionOwner } from "./redisson-names";
import { freePermits, redissonPermitExpirableSemaphore } from "./redisson-semaphore";
import { shedlock } from "./shedlock";
import { springRedisLockRegistry } from "./spring";
import type { Recogniser, Recognition, RecognitionHints, RelatedSamples } from "./types";

export type { Recogniser, Recognition, RecognitionHints, RelatedSamples } from "./types";
export { parsePubsubNumsub, pubsubChannelFor, withSubscriberHint } from "./pubsub";

/**
 * Most specific first: structure and key prefixes that only one library writes, then value formats, then shapes
 * several libraries share (their rules end in "-guess"), then the generic rules; genericAny always answers.
 */
export const RECOGNISERS: readonly Recogniser[] = [
  redissonReadWriteLock,
  redissonLock,
  redissonPermitExpirableSemaphore,
  redisSemaphoreSemaphore,
  redisSemaphoreMutex,
  shedlock,
  pottery,
  redisPyLock,
  nodeRedlock,
  goRedsync,
  bsmRedislock,
  springRedisLockRegistry,
  genericString,
  genericHash,
  genericZset,
  genericAny,
];

const NO_RELATED: RelatedSamples = new Map();

export function recognise(
  sample: KeySample,
  nowMs: number,
  related: RelatedSamples = NO_RELATED,
  hints: RecognitionHints = {},
  recognisers: readonly Recogniser[] = RECOGNISERS,
): Recognition {
  const keyText = sample.key.toString("utf8");
  for (const r of recognisers) {
    try {
      const hit = r.recognise(sample, keyText, nowMs, related, hints);
      if (hit) return hit;
    } catch {
      // A recogniser that chokes on a hostile value must not take the others down: fall through to the next.
    }
  }
  return genericAny.recognise(sample, keyText, nowMs, related, hints)!;
}

/**
 * Keys to read alongside this lock, so that recognise() can see them in `related`. Pure; bounded (at most 32).
 *   Redisson lock hash           redisson_lock_queue:{<name>} (list), redisson_lock_timeout:{<name>} (zset)
 *   Redisson read/write hash     {<name>}:<uuid>:<tid>:rwlock_timeout:<n> (string; only its PTTL matters)
 *   integer string               {<name>}:timeout (zset: RPermitExpirableSemaphore's leased permits)
 * Names that are not valid UTF-8 get none: the companion's name could not be spelt back in the same bytes.
 */
export function companionKeysFor(keyText: string, sample: KeySample): string[] {
  try {
    if (companionOwner(keyText) !== null || !Buffer.from(keyText, "utf8").equals(sample.key)) return [];
    if (sample.type === "hash" && sample.hash) {
      const fields = sample.hash.fields;
      if (fields.some(([f]) => f.toString("latin1") === "mode")) return rwTimeoutKeys(keyText, sample);
      if (fields.length > 0 && fields.every(([f]) => parseRedissonField(f)?.write === false)) {
        return [prefixName(LOCK_QUEUE, keyText), prefixName(LOCK_TIMEOUT, keyText)];
      }
      return [];
    }
    if (sample.type === "string" && freePermits(sample) !== null) return [permitTimeoutKey(keyText)];
  } catch {
    // Same totality as recognise(): a hostile sample means no companions, not a failed poll.
  }
  return [];
}

/**
 * For a key that is only part of another lock (a Redisson fair-lock queue or deadline set, a read hold's lease,
 * an unlock marker, a permit-expirable semaphore's lease set), the owning lock's key text; otherwise null.
 * The source folds such a key into its owner when the owner is tracked, instead of listing it as a lock.
 */
export function companionOwner(keyText: string): string | null {
  try {
    return redissonCompanionOwner(keyText);
  } catch {
    return null;
  }
}
