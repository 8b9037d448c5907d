import type { Hazard, LockHolder, Waiter } from "../../../../lib/contract/lock";
import type { KeySample } from "../redis-port";
import { LOCK_QUEUE, LOCK_TIMEOUT, prefixName, rwTimeoutKey } from "./redisson-names";
import {
  ascii,
  decimalInteger,
  finiteMs,
  hazard,
  isoOrNull,
  longId,
  owner,
  seconds,
  text,
  uuidVersion,
} from "./shapes";
import type { Recogniser, RelatedSamples } from "./types";

/*
 * Redisson RLock / RFairLock / RReadWriteLock (read in RedissonLock, RedissonFairLock, RedissonReadLock,
 * RedissonBaseLock). Sample of an RLock held once by thread 1 of one client, with the watchdog's 30 s lease:
 *   HGETALL order:1  ->  "8743c9c0-0795-4907-87fd-6c719a6b4586:1" "1"          PTTL order:1 -> 29876
 * RFairLock adds a FIFO of waiting threads and each waiter's deadline (epoch ms, client clock):
 *   LRANGE redisson_lock_queue:{order:1} 0 -1   -> "5f0c...:77" "5f0c...:78"
 *   ZRANGE redisson_lock_timeout:{order:1} 0 -1 WITHSCORES -> "5f0c...:77" "1714557600000" ...
 * RReadWriteLock, read-locked by two threads (one of them twice):
 *   HGETALL cfg  ->  "mode" "read"  "8743...:1" "2"  "a1b2...:9" "1"
 *   and one string per read hold: {cfg}:8743...:1:rwlock_timeout:1, ...:2, {cfg}:a1b2...:9:rwlock_timeout:1
 * write-locked:  "mode" "write"  "8743...:1:write" "1"
 */

export const RULE_LOCK = "redisson-lock";
export const RULE_FAIR_LOCK = "redisson-fair-lock";
export const RULE_RW_READ = "redisson-rwlock-read";
export const RULE_RW_WRITE = "redisson-rwlock-write";

/** Re-entry counts beyond this come from lock() in a loop without unlock(), not from real nesting. */
const RUNAWAY_REENTRY = 10_000;
/** Waiter deadlines are written with the client's clock: allow this much skew before calling one overdue. */
const DEADLINE_GRACE_MS = 2_000;
/** Read holds whose lease key we read at most, per lock: a lock re-entered a million times costs no more. */
const MAX_RW_TIMEOUT_KEYS = 32;
const MAX_RW_TIMEOUT_KEYS_PER_HOLDER = 8;

export interface RedissonField {
  text: string;
  clientId: string;
  thread: number | string;
  write: boolean;
}

/** `<clientUUID>:<threadId>` or, for a write hold, `<clientUUID>:<threadId>:write`. */
export function parseRedissonField(field: Buffer): RedissonField | null {
  const t = ascii(field, 80);
  if (t === null) return null;
  const m = /^([0-9a-f-]{36}):(-?[0-9]{1,19})(:write)?$/.exec(t);
  if (!m || uuidVersion(m[1]!) === null) return null;
  return { text: t, clientId: m[1]!, thread: longId(m[2]!), write: m[3] !== undefined };
}

function exists(s: KeySample | undefined): s is KeySample {
  return s !== undefined && s.type !== "none" && s.pttl !== -2;
}

function holdCount(value: Buffer): number | null {
  const t = ascii(value, 24);
  const n = t === null ? null : decimalInteger(t);
  return n !== null && n > 0 ? n : null;
}

function leaseHazards(sample: KeySample): Hazard[] {
  if (sample.pttl !== -1) return [];
  return [
    hazard(
      "redisson-no-lease",
      "warning",
      "Redisson lock with no TTL: the watchdog always sets one (30 s by default), so this was written by a client " +
        "that persisted it (a crashed lock() with leaseTime -1 in old versions, a PERSIST, or a copy/restore). " +
        "It stays until forceUnlock() or DEL.",
    ),
  ];
}

function holderOf(f: RedissonField, count: number | null): LockHolder {
  const h: LockHolder = { clientId: f.clientId, thread: f.thread };
  if (count !== null) h.reentrant = count;
  return h;
}

/** Plain and fair re-entrant locks: a hash whose every field is `<uuid>:<tid>`. */
export const redissonLock: Recogniser = {
  name: "redisson-lock",
  recognise(sample, keyText, nowMs, related) {
    const h = sample.hash;
    if (sample.type !== "hash" || !h || h.fields.length === 0) return null;
    const parsed = h.fields.map(([f, v]) => ({ f: parseRedissonField(f), v }));
    if (parsed.some((p) => p.f === null || p.f.write)) return null;
    const holders = parsed
      .map((p) => ({ f: p.f!, count: holdCount(p.v), raw: p.v }))
      .sort((a, b) => (a.f.text < b.f.text ? -1 : a.f.text > b.f.text ? 1 : 0));
    const first = holders[0]!;
    const holder = holderOf(first.f, first.count);
    const hazards = leaseHazards(sample);
    if (first.count === null) {
      holder.reentrantRaw = text(first.raw, 32);
      hazards.push(
        hazard(
          "redisson-malformed-count",
          "info",
          "The re-entry count is not a positive integer: written by something other than Redisson's scripts.",
        ),
      );
    } else if (first.count > RUNAWAY_REENTRY) {
      hazards.push(
        hazard(
          "redisson-reentry-runaway",
          "warning",
          `Re-entered ${first.count} times: lock() is being called without a matching unlock(); the lock is only freed when every entry is unlocked.`,
        ),
      );
    }
    if (h.length > 1) {
      holder.holders = h.length;
      hazards.push(
        hazard(
          "redisson-multiple-holders",
          "critical",
          `${h.length} threads hold an exclusive Redisson lock at once: the hash was written outside Redisson's scripts or by incompatible versions.`,
        ),
      );
    }

    const queue = related.get(prefixName(LOCK_QUEUE, keyText));
    const timeouts = related.get(prefixName(LOCK_TIMEOUT, keyText));
    if (!exists(queue) && !exists(timeouts)) {
      return {
        library: "redisson",
        rule: RULE_LOCK,
        owner: owner(Buffer.from(first.f.text, "latin1")),
        holder,
        waiters: [],
        hazards,
      };
    }
    const fair = fairWaiters(queue, timeouts, nowMs);
    holder.fair = true;
    holder.queued = fair.queued;
    hazards.push(...fair.hazards);
    return {
      library: "redisson",
      rule: RULE_FAIR_LOCK,
      owner: owner(Buffer.from(first.f.text, "latin1")),
      holder,
      waiters: fair.waiters,
      hazards,
    };
  },
};

/**
 * Waiters of a fair lock in queue order. The queue does not record when a thread queued, only the deadline after
 * which it is dropped (the previous waiter's deadline + threadWaitTime, 5 min by default), so `since` stays unset.
 */
export function fairWaiters(
  queue: KeySample | undefined,
  timeouts: KeySample | undefined,
  nowMs: number,
): { waiters: Waiter[]; queued: number; hazards: Hazard[] } {
  const deadlines = new Map<string, number>();
  const zset = exists(timeouts) ? timeouts.zset : undefined;
  for (const [m, score] of zset?.members ?? []) deadlines.set(m.toString("latin1"), score);
  const list = exists(queue) ? queue.list : undefined;
  // Without the queue list (not read, or gone) the deadline set has the same waiters in the same order.
  const entries = list ? list.items : (zset?.members ?? []).map(([m]) => m);
  const queued = list ? list.length : (zset?.length ?? 0);
  let overdue = 0;
  const waiters = entries.map((item): Waiter => {
    const score = deadlines.get(item.toString("latin1"));
    const deadline = score === undefined ? null : finiteMs(score);
    let detail: string;
    if (score === undefined) detail = "no deadline entry";
    else if (deadline === null || isoOrNull(deadline) === null) detail = "deadline unreadable";
    else {
      detail = `deadline ${isoOrNull(deadline)}`;
      if (deadline < nowMs - DEADLINE_GRACE_MS) {
        overdue++;
        detail += " (passed)";
      }
    }
    const f = parseRedissonField(item);
    if (f) detail += `; client ${f.clientId} thread ${f.thread}`;
    return { owner: owner(item), detail };
  });
  const hazards: Hazard[] = [];
  if (overdue > 0) {
    hazards.push(
      hazard(
        "fair-lock-waiter-expired",
        "warning",
        `${overdue} queued waiter(s) are past their deadline: the thread gave up or died. Redisson drops them only ` +
          "when another thread tries the lock; until then everyone behind them waits longer.",
      ),
    );
  }
  return { waiters, queued, hazards };
}

/** RReadWriteLock: a hash with `mode` = read|write and holder fields. */
export const redissonReadWriteLock: Recogniser = {
  name: "redisson-rwlock",
  recognise(sample, keyText, nowMs, related) {
    const h = sample.hash;
    if (sample.type !== "hash" || !h) return null;
    const modeEntry = h.fields.find(([f]) => f.length === 4 && f.toString("latin1") === "mode");
    if (!modeEntry) return null;
    const mode = ascii(modeEntry[1], 8);
    if (mode !== "read" && mode !== "write") return null;
    const others = h.fields.filter((e) => e !== modeEntry);
    const parsed = others.map(([f, v]) => ({ f: parseRedissonField(f), count: holdCount(v) }));
    if (parsed.length === 0 || parsed.some((p) => p.f === null)) return null;
    const holds = parsed as Array<{ f: RedissonField; count: number | null }>;
    holds.sort((a, b) => (a.f.text < b.f.text ? -1 : a.f.text > b.f.text ? 1 : 0));
    const readers = holds.filter((p) => !p.f.write);
    const writers = holds.filter((p) => p.f.write);
    const hazards = leaseHazards(sample);
    const lease = readHoldLeases(keyText, readers, related);
    hazards.push(...lease.hazards);

    if (mode === "write") {
      const w = writers[0];
      const holder: LockHolder = w ? holderOf(w.f, w.count) : {};
      holder.mode = "write";
      if (readers.length > 0) holder.readHoldsOfWriter = readers.reduce((s, r) => s + (r.count ?? 0), 0);
      if (!w)
        hazards.push(hazard("redisson-rwlock-malformed", "info", "Write mode without a `<uuid>:<tid>:write` field."));
      return {
        library: "redisson",
        rule: RULE_RW_WRITE,
        owner: w ? owner(Buffer.from(w.f.text, "latin1")) : null,
        holder,
        waiters: [],
        hazards,
      };
    }

    if (writers.length > 0)
      hazards.push(hazard("redisson-rwlock-malformed", "info", "Read mode with a write holder field."));
    const first = readers[0] ?? writers[0]!;
    const readerCount = Math.max(readers.length, h.length - 1 - writers.length);
    const holder: LockHolder = {
      mode: "read",
      readers: readerCount,
      holds: readers.reduce((s, r) => s + (r.count ?? 0), 0),
    };
    if (readerCount === 1) Object.assign(holder, holderOf(first.f, first.count));
    if (lease.shortest !== null) holder.shortestHoldTtlMs = lease.shortest;
    // The owner names the set of readers (sorted, so the page order of HSCAN does not fake an owner change).
    const more = readerCount > 1 ? ` (+${readerCount - 1} readers)` : "";
    return {
      library: "redisson",
      rule: RULE_RW_READ,
      owner: `${owner(Buffer.from(first.f.text, "latin1"))}${more}`,
      holder,
      waiters: [],
      hazards,
    };
  },
};

/** Companion keys of a read/write lock: one lease key per read hold, bounded. */
export function rwTimeoutKeys(keyText: string, sample: KeySample): string[] {
  const out: string[] = [];
  for (const [f, v] of sample.hash?.fields ?? []) {
    const p = parseRedissonField(f);
    const n = holdCount(v);
    if (!p || p.write || n === null) continue;
    for (let i = 1; i <= Math.min(n, MAX_RW_TIMEOUT_KEYS_PER_HOLDER) && out.length < MAX_RW_TIMEOUT_KEYS; i++) {
      out.push(rwTimeoutKey(keyText, p.text, i));
    }
  }
  return out;
}

function readHoldLeases(
  keyText: string,
  readers: Array<{ f: RedissonField; count: number | null }>,
  related: RelatedSamples,
): { shortest: number | null; hazards: Hazard[] } {
  let shortest: number | null = null;
  let lost = 0;
  for (const r of readers) {
    for (let i = 1; i <= Math.min(r.count ?? 0, MAX_RW_TIMEOUT_KEYS_PER_HOLDER); i++) {
      const s = related.get(rwTimeoutKey(keyText, r.f.text, i));
      if (s === undefined) continue;
      if (!exists(s)) lost++;
      else if (s.pttl >= 0) shortest = shortest === null ? s.pttl : Math.min(shortest, s.pttl);
    }
  }
  const hazards: Hazard[] = [];
  if (lost > 0) {
    hazards.push(
      hazard(
        "rwlock-read-hold-expired",
        "warning",
        `${lost} read hold(s) have lost their lease key (the reader stopped renewing, e.g. crashed) but are still ` +
          "counted in the hash: writers stay blocked until another reader unlocks or the hash's own TTL runs out" +
          (shortest === null ? "." : ` (shortest live hold ${seconds(shortest)}).`),
      ),
    );
  }
  return { shortest, hazards };
}
