import type { Hazard, LockHolder } from "../../../../lib/contract/lock";
import type { KeySample } from "../redis-port";
import { permitTimeoutKey } from "./redisson-names";
import { ascii, decimalInteger, finiteMs, hazard, isLowerHex, isoOrNull, owner, wholeString } from "./shapes";
import type { Recogniser } from "./types";

/*
 * Redisson RSemaphore and RPermitExpirableSemaphore.
 *
 * RSemaphore (RedissonSemaphore): one string with the number of FREE permits, changed by DECRBY/INCRBY in Lua.
 * The total is not stored, and a plain integer string is also what textbook locks write (`SETNX key 1`, a thread
 * or user id), so on its own it is reported as a generic integer token; subscribers on its channel
 * `redisson_sc:{<name>}` (threads waiting for a permit) confirm it, see withSubscriberHint.
 *   GET parking            -> "3"
 *
 * RPermitExpirableSemaphore (read in RedissonPermitExpirableSemaphore, Redisson 3.2x): the same free-permit
 * string plus a zset `{<name>}:timeout` of leased permits. Each member is a permit id: 16 random bytes
 * (ServiceManager.generateId, hex) stored as raw bytes (ByteArrayCodec, ByteBufUtil.decodeHexDump); the score is
 * the lease's end in epoch ms, or 922337203685477 for a permit acquired without a lease. Expired permits are only
 * given back (ZREM + INCRBY) when a client next calls acquire/availablePermits, so they linger.
 *   GET pool               -> "1"
 *   ZRANGE {pool}:timeout 0 -1 WITHSCORES -> <16 bytes> "1714557630000" <16 bytes> "922337203685477"
 * Unverified: older releases (before ids were stored as bytes) may store the id as 32 hex characters; both are
 * read. The channel is `redisson_sc:{<name>}` as for RSemaphore.
 */

export const RULE_PERMIT_EXPIRABLE = "redisson-permit-expirable-semaphore";
export const RULE_SEMAPHORE_BY_WAITERS = "redisson-semaphore-confirmed-by-waiters";

/** RedissonPermitExpirableSemaphore.nonExpirableTimeout: the score of a permit taken without a lease. */
const NON_EXPIRABLE = 922337203685477;

function exists(s: KeySample | undefined): s is KeySample {
  return s !== undefined && s.type !== "none" && s.pttl !== -2;
}

/** The free-permit count of a Redisson semaphore string, or null. */
export function freePermits(sample: KeySample): number | null {
  const whole = wholeString(sample);
  const t = whole ? ascii(whole, 20) : null;
  return t === null ? null : decimalInteger(t);
}

export function permitId(member: Buffer): string {
  if (member.length === 16) return member.toString("hex");
  const t = ascii(member, 32);
  return t !== null && isLowerHex(t, 32) ? t : owner(member);
}

export function overSubscribed(free: number): Hazard[] {
  if (free >= 0) return [];
  return [
    hazard(
      "semaphore-over-subscribed",
      "critical",
      `Free permits are ${free}: more permits are held than the semaphore has (addPermits with a negative count, or a ` +
        "SET on the key, while permits were out).",
    ),
  ];
}

export const redissonPermitExpirableSemaphore: Recogniser = {
  name: "redisson-permit-expirable-semaphore",
  recognise(sample, keyText, nowMs, related) {
    const free = freePermits(sample);
    if (free === null) return null;
    const leased = related.get(permitTimeoutKey(keyText));
    if (!exists(leased) || leased.type !== "zset" || !leased.zset) return null;
    const z = leased.zset;
    let expired = 0;
    let withoutLease = 0;
    let nextExpiry: number | null = null;
    for (const [, score] of z.members) {
      if (score === NON_EXPIRABLE) withoutLease++;
      else {
        const ms = finiteMs(score);
        if (ms === null) continue;
        if (ms <= nowMs) expired++;
        else if (nextExpiry === null || ms < nextExpiry) nextExpiry = ms;
      }
    }
    const holder: LockHolder = { permitsFree: free, permitsHeld: z.length, permitsTotal: free + z.length };
    if (withoutLease > 0) holder.permitsWithoutLease = withoutLease;
    const next = isoOrNull(nextExpiry);
    if (next) holder.nextLeaseEnds = next;
    const hazards = overSubscribed(free);
    if (expired > 0) {
      holder.permitsExpired = expired;
      hazards.push(
        hazard(
          "semaphore-expired-permits",
          "info",
          `${expired} leased permit(s) have expired but are still counted as held: Redisson gives them back only when a client next acquires or asks for available permits.`,
        ),
      );
    }
    const first = z.members[0];
    return {
      library: "redisson",
      rule: RULE_PERMIT_EXPIRABLE,
      owner: first ? permitId(first[0]) : null,
      holder,
      waiters: [],
      hazards,
      // Each leased permit is a holder of its own; the score is its lease's end (or "no lease").
      holders: z.members.map(([m, score]) => {
        const ms = score === NON_EXPIRABLE ? null : finiteMs(score);
        return { owner: permitId(m), ttlMs: ms === null ? null : Math.max(0, Math.round(ms - nowMs)) };
      }),
      ...(z.members.length < z.length ? { holdersTotal: z.length } : {}),
    };
  },
};
