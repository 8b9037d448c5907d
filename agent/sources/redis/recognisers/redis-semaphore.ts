import type { Hazard, LockHolder } from "../../../../lib/contract/lock";
import type { KeySample } from "../redis-port";
import { ascii, finiteMs, hazard, isoOrNull, isUuid4, owner, seconds, text } from "./shapes";
import type { Recogniser } from "./types";

/*
 * redis-semaphore (npm, read in 5.x: Lock.js, mutex/acquire.js, semaphore/acquire/lua.js, multiSemaphore/...).
 * The identifier is crypto.randomUUID(), or `${uuid}-${identifierSuffix}`, or whatever the caller passes.
 *
 * Mutex / RedlockMutex:  SET mutex:<key> <identifier> NX PX lockTimeout (default 10 000, refreshed every 0.8x)
 *   GET mutex:orders       -> "1b4e28ba-2fa1-4d3b-a3f5-ef19a2b5c8e0"
 * Semaphore / RedlockSemaphore, in Lua:  ZREMRANGEBYSCORE key -inf now-lockTimeout; ZADD key now identifier;
 *   PEXPIRE key lockTimeout. A refresh re-ZADDs with the new time. MultiSemaphore adds `${identifier}_${i}` per
 *   permit. `now` is the client's Date.now().
 *   ZRANGE semaphore:pool 0 -1 WITHSCORES -> "1b4e...c8e0" "1714557600000" "9c1d...77aa_0" "1714557601234"
 */

export const RULE_MUTEX_UUID = "redis-semaphore-mutex";
export const RULE_MUTEX_SUFFIX = "redis-semaphore-mutex-uuid-suffix";
export const RULE_MUTEX_CUSTOM = "redis-semaphore-mutex-custom-identifier";
export const RULE_SEMAPHORE = "redis-semaphore-semaphore";

const MUTEX = Buffer.from("mutex:");
const SEMAPHORE = Buffer.from("semaphore:");
/** redis-semaphore's default lockTimeout. */
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;

function startsWith(key: Buffer, prefix: Buffer): boolean {
  return key.length > prefix.length && key.subarray(0, prefix.length).equals(prefix);
}

export const redisSemaphoreMutex: Recogniser = {
  name: "redis-semaphore-mutex",
  recognise(sample) {
    const s = sample.string;
    if (sample.type !== "string" || !s || !startsWith(sample.key, MUTEX)) return null;
    const whole = s.prefix.length === s.length ? ascii(s.prefix, 256) : null;
    let rule = RULE_MUTEX_CUSTOM;
    let holder: LockHolder | null = null;
    if (whole !== null && isUuid4(whole)) rule = RULE_MUTEX_UUID;
    else if (whole !== null && whole.length > 37 && whole[36] === "-" && isUuid4(whole.slice(0, 36))) {
      rule = RULE_MUTEX_SUFFIX;
      holder = { identifierSuffix: text(Buffer.from(whole.slice(37), "latin1")) };
    }
    return { library: "redis-semaphore", rule, owner: owner(s.prefix, s.length), holder, waiters: [] };
  },
};

/** The uuid part of an identifier, so the permits of one MultiSemaphore client count as one client. */
function clientOf(member: Buffer): string {
  const t = ascii(member, 256);
  if (t === null) return member.toString("latin1");
  const m = /^(.*)_[0-9]+$/s.exec(t);
  return m ? m[1]! : t;
}

/**
 * Entries older than lockTimeout are dead holders (they stopped refreshing). lockTimeout lives in the clients,
 * but every acquire/refresh PEXPIREs the key with it, so when the whole zset was read:
 *   lockTimeout ~ (now + pttl) - newestScore    and    stale  <=>  score + pttl < newestScore
 * which compares client timestamps only, so the agent's clock skew does not matter. Otherwise assume the default
 * (never less than the key's own remaining TTL).
 */
export function staleThreshold(
  sample: KeySample,
  nowMs: number,
): { olderThan: number; lockTimeoutMs: number; inferred: boolean } | null {
  const z = sample.zset!;
  const scores = z.members.map(([, s]) => finiteMs(s)).filter((s): s is number => s !== null);
  if (z.members.length === z.length && scores.length === z.length && scores.length > 0 && sample.pttl > 0) {
    const newest = scores.reduce((a, b) => (b > a ? b : a));
    return { olderThan: newest - sample.pttl, lockTimeoutMs: Math.round(nowMs + sample.pttl - newest), inferred: true };
  }
  const lockTimeoutMs = Math.max(DEFAULT_LOCK_TIMEOUT_MS, sample.pttl);
  return { olderThan: nowMs - lockTimeoutMs, lockTimeoutMs, inferred: false };
}

/** One permit: its lease ends lockTimeout after its last acquire/refresh (the same clock as the threshold). */
export function permitHolding(
  member: Buffer,
  score: number,
  threshold: { olderThan: number } | null,
): { owner: string; ttlMs?: number } {
  const ms = finiteMs(score);
  const holding: { owner: string; ttlMs?: number } = { owner: owner(member) };
  if (ms !== null && threshold) holding.ttlMs = Math.max(0, Math.round(ms - threshold.olderThan));
  return holding;
}

export const redisSemaphoreSemaphore: Recogniser = {
  name: "redis-semaphore-semaphore",
  recognise(sample, keyText, nowMs, _related, hints) {
    const z = sample.zset;
    if (sample.type !== "zset" || !z || !startsWith(sample.key, SEMAPHORE)) return null;
    const threshold = staleThreshold(sample, nowMs);
    let stale = 0;
    let unreadable = 0;
    let oldest: number | null = null;
    const clients = new Set<string>();
    for (const [m, score] of z.members) {
      clients.add(clientOf(m));
      const ms = finiteMs(score);
      if (ms === null) {
        unreadable++;
        continue;
      }
      if (oldest === null || ms < oldest) oldest = ms;
      if (threshold && ms < threshold.olderThan) stale++;
    }
    const holder: LockHolder = { permitsHeld: z.length, clients: clients.size };
    const since = isoOrNull(oldest);
    if (since) holder.oldestRefreshAt = since;
    if (threshold) {
      holder.lockTimeoutMs = threshold.lockTimeoutMs;
      holder.lockTimeoutInferred = threshold.inferred;
    }
    const limit = hints?.semaphoreLimits?.get(keyText);
    const hazards: Hazard[] = [];
    if (limit !== undefined && Number.isFinite(limit)) {
      holder.limit = limit;
      if (z.length > limit) {
        hazards.push(
          hazard(
            "semaphore-over-subscribed",
            "critical",
            `${z.length} permits held, limit ${limit}: clients disagree on the limit, or entries were added outside the library.`,
          ),
        );
      }
    }
    if (stale > 0 && threshold) {
      hazards.push(
        hazard(
          "semaphore-stale-holders",
          "warning",
          `${stale} holder(s) last refreshed more than lockTimeout (${seconds(threshold.lockTimeoutMs)}, ` +
            `${threshold.inferred ? "inferred from the key's TTL" : "assumed default"}) ago: their process stopped ` +
            "refreshing. They still show as holders until the next acquire removes them.",
        ),
      );
    }
    if (unreadable > 0) {
      hazards.push(
        hazard(
          "semaphore-unreadable-scores",
          "info",
          `${unreadable} member(s) have a score that is not a time (NaN or infinite).`,
        ),
      );
    }
    const first = z.members[0];
    return {
      library: "redis-semaphore",
      rule: RULE_SEMAPHORE,
      owner: first ? owner(first[0]) : null,
      holder,
      waiters: [],
      hazards,
      // Each member is one permit with its own lease (score + lockTimeout), so permits come and go independently.
      holders: z.members.map(([m, score]) => permitHolding(m, score, threshold)),
      ...(z.members.length < z.length ? { holdersTotal: z.length } : {}),
    };
  },
};
