import { escapeText } from "../../../core/escape";
import { RULE_INTEGER_TOKEN } from "./generic";
import { RULE_LOCK, RULE_RW_READ, RULE_RW_WRITE } from "./redisson";
import { LOCK_CHANNEL, prefixName, RWLOCK_CHANNEL, SEMAPHORE_CHANNEL } from "./redisson-names";
import { overSubscribed, RULE_PERMIT_EXPIRABLE, RULE_SEMAPHORE_BY_WAITERS } from "./redisson-semaphore";
import type { Recognition } from "./types";

/**
 * Redisson's waiting threads SUBSCRIBE to a channel per lock and wait for the unlock message; nothing about them
 * is stored in keys. PUBSUB NUMSUB on that channel is the only trace, and it counts connections, not threads:
 * one Redisson client subscribes once per channel for all of its waiting threads.
 *
 * The channel of a recognised key, or null when waiters are visible otherwise or not at all:
 *   RLock            redisson_lock__channel:{<name>}
 *   RReadWriteLock   redisson_rwlock:{<name>}
 *   (permit-expirable) semaphore, and any integer string that might be an RSemaphore   redisson_sc:{<name>}
 * A fair lock's waiters are in its queue (each also subscribes its own `...:{<name>}:<uuid>:<tid>` channel).
 */
export function pubsubChannelFor(keyText: string, recognition: Recognition): string | null {
  const { library, rule } = recognition;
  if (library === "redisson" && rule === RULE_LOCK) return prefixName(LOCK_CHANNEL, keyText);
  if (library === "redisson" && (rule === RULE_RW_READ || rule === RULE_RW_WRITE))
    return prefixName(RWLOCK_CHANNEL, keyText);
  if (library === "redisson" && (rule === RULE_PERMIT_EXPIRABLE || rule === RULE_SEMAPHORE_BY_WAITERS))
    return prefixName(SEMAPHORE_CHANNEL, keyText);
  if (library === "generic" && rule === RULE_INTEGER_TOKEN) return prefixName(SEMAPHORE_CHANNEL, keyText);
  return null;
}

/**
 * Sample of the reply (RESP2; ioredis gives the flat array, names as strings or Buffers, counts as numbers):
 *   PUBSUB NUMSUB redisson_lock__channel:{order:1} redisson_sc:{pool}
 *   1) "redisson_lock__channel:{order:1}"
 *   2) (integer) 2
 *   3) "redisson_sc:{pool}"
 *   4) (integer) 0
 * RESP3 clients may hand over a map instead. Anything malformed is skipped, never thrown.
 */
export function parsePubsubNumsub(reply: unknown): Map<string, number> {
  const out = new Map<string, number>();
  const put = (name: unknown, count: unknown) => {
    const channel = Buffer.isBuffer(name) ? name.toString("utf8") : typeof name === "string" ? name : null;
    const raw = Buffer.isBuffer(count) ? count.toString("latin1") : count;
    const n = typeof raw === "number" ? raw : typeof raw === "string" && /^[0-9]{1,15}$/.test(raw) ? Number(raw) : NaN;
    if (channel === null || !Number.isSafeInteger(n) || n < 0) return;
    out.set(channel, Math.max(n, out.get(channel) ?? 0));
  };
  try {
    if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) put(reply[i], reply[i + 1]);
    else if (reply instanceof Map) for (const [k, v] of reply) put(k, v);
    else if (reply !== null && typeof reply === "object") for (const [k, v] of Object.entries(reply)) put(k, v);
  } catch {
    // A reply that cannot even be iterated is no information, not an error.
  }
  return out;
}

/**
 * Adds the subscriber count of the key's channel as a waiter hint. An integer string with subscribers on
 * `redisson_sc:{<name>}` is a Redisson RSemaphore whose free permits are the value: relabelled as such.
 */
export function withSubscriberHint(
  keyText: string,
  recognition: Recognition,
  numsub: ReadonlyMap<string, number>,
): Recognition {
  const channel = pubsubChannelFor(keyText, recognition);
  const count = channel === null ? undefined : numsub.get(channel);
  if (channel === null || count === undefined || !Number.isSafeInteger(count) || count <= 0) return recognition;
  const hint = {
    owner: `subscribers of ${escapeText(channel, 128)}`,
    detail: `${count} client connection(s) waiting for the unlock message; each Redisson client subscribes once for all of its waiting threads`,
  };
  const next: Recognition = { ...recognition, waiters: [...recognition.waiters, hint] };
  if (recognition.library === "generic" && recognition.rule === RULE_INTEGER_TOKEN) {
    const free = recognition.holder?.value;
    if (typeof free === "number") {
      next.library = "redisson";
      next.rule = RULE_SEMAPHORE_BY_WAITERS;
      next.holder = { permitsFree: free };
      // The value is a count of free permits, not a holder: RSemaphore does not store who holds its permits, so
      // a change of the count is permits coming and going, never a new owner.
      next.owner = null;
      next.hazards = [...(recognition.hazards ?? []), ...overSubscribed(free)];
    }
  }
  return next;
}
