/**
 * The live locks, indexed for queries at 100,000 locks: each lock carries precomputed search text and sort values,
 * so a query is one pass that filters, counts and keeps only the page it answers (a bounded heap, not a sort of
 * every match). Pure.
 */
import type { LockCounts } from "../contract/api";
import type { Lock } from "../contract/lock";
import { keyPattern } from "../contract/key-pattern";
import { queueLength } from "../contract/lock-queue";
import { encodeCursor, type Cursor, type LockFilter, type LockQuery, type LockSort, type SortKey } from "./lock-query";

export interface IndexedLock {
  lock: Lock;
  /**
   * The dashboard's number for this lock, kept while it is held: the tie-breaker of every sort (a number compares
   * far faster than an id, and ties are common: thousands of locks share a lease length).
   */
  seq: number;
  /** Dashboard clock when lock.ttlMs was current. */
  receivedAtMs: number;
  /**
   * resource and owner lower-cased, for the substring filter (source and library are shared: see lowerShared). The
   * same string objects as the lock's own when those are lower-case already (most keys are), so nothing is copied.
   */
  resourceLc: string;
  ownerLc: string;
  /** When the lease runs out on the dashboard's clock: a TTL sort that does not move as time passes. */
  expiresAtMs: number;
  sinceMs: number;
  waiters: number;
  /** Worst severity first, then how many: critical 3xxx, warning 2xxx, info 1xxx. */
  hazardScore: number;
  pattern: string;
}

const RANK = { info: 1, warning: 2, critical: 3 } as const;

/** Locks that never expire sort as the longest TTL: they are the ones that never free themselves. */
const NEVER = Number.MAX_SAFE_INTEGER;

let nextSeq = 1;

/**
 * One string object per distinct value of the fields that repeat across a fleet (backend, source, library, rule,
 * kind, agent, key pattern): each lock from JSON.parse carries its own copies, about 200 bytes a lock. Bounded, so a
 * flood of distinct values only stops being shared.
 */
const shared = new Map<string, string>();
const MAX_SHARED = 10_000;

export function intern(s: string): string {
  const known = shared.get(s);
  if (known !== undefined) return known;
  if (shared.size < MAX_SHARED) shared.set(s, s);
  return s;
}

/** The lower-case form of a value that repeats across a fleet (source, library), one string per distinct value. */
const lowered = new Map<string, string>();

/** The lower-case form of a shared value (source, library). */
export function lowerShared(s: string): string {
  let lc = lowered.get(s);
  if (lc === undefined) {
    lc = lower(s);
    if (lowered.size < MAX_SHARED) lowered.set(s, lc);
  }
  return lc;
}

/** The last answer for each shared field: a filter's pass meets the same source and library lock after lock. */
interface LastMatch {
  of: string;
  q: string;
  hit: boolean;
}
const lastSource: LastMatch = { of: "", q: "", hit: false };
const lastLibrary: LastMatch = { of: "", q: "", hit: false };

function sharedIncludes(s: string, q: string, last: LastMatch): boolean {
  if (s === last.of && q === last.q) return last.hit;
  const hit = lowerShared(s).includes(q);
  last.of = s;
  last.q = q;
  last.hit = hit;
  return hit;
}

/** `s` itself when it is lower-case already: a lower-cased copy of every key would double what the keys cost. */
function lower(s: string): string {
  const lc = s.toLowerCase();
  return lc === s ? s : lc;
}

/**
 * One string object for the times that the locks of one message share (the agent observes a poll's locks at one
 * time, and a first poll sees them all since then): about 80 bytes a lock otherwise. Only the recent values are
 * kept, so times that never repeat only stop being shared.
 */
const recentTimes = new Map<string, string>();
const MAX_RECENT_TIMES = 1024;

function shareTime(s: string): string {
  const known = recentTimes.get(s);
  if (known !== undefined) return known;
  if (recentTimes.size >= MAX_RECENT_TIMES) recentTimes.clear();
  recentTimes.set(s, s);
  return s;
}

/**
 * Most locks have no waiter and no hazard: one shared empty array instead of two per lock (about 64 bytes). Not
 * frozen: with a frozen one the live-conditions test went past its 5 s timeout at load 5 (4.9 s without; a frozen
 * array has its own elements kind, the likely cost). Nothing in the dashboard changes a lock it was sent; a change
 * to this array would show on every lock.
 */
const NONE: never[] = [];

/** Indexes a lock (sharing its repeated strings); `seq` is the previous entry's when the lock was already known. */
export function indexLock(lock: Lock, receivedAtMs: number, seq: number = nextSeq++): IndexedLock {
  lock.backend = intern(lock.backend) as Lock["backend"];
  lock.source = intern(lock.source);
  lock.library = intern(lock.library);
  lock.rule = intern(lock.rule);
  lock.kind = intern(lock.kind);
  lock.agentId = intern(lock.agentId);
  lock.since = shareTime(lock.since);
  lock.observedAt = shareTime(lock.observedAt);
  // A string lock's preview is usually its value, which is its owner: one string for both.
  if (lock.valuePreview !== null && lock.valuePreview === lock.owner) lock.valuePreview = lock.owner;
  if (lock.waiters.length === 0) lock.waiters = NONE;
  if (lock.hazards.length === 0) lock.hazards = NONE;
  let worst = 0;
  for (const h of lock.hazards) worst = Math.max(worst, RANK[h.severity] ?? 0);
  const since = Date.parse(lock.since);
  return {
    lock,
    seq,
    receivedAtMs,
    resourceLc: lower(lock.resource),
    ownerLc: lock.owner === null ? "" : lower(lock.owner),
    expiresAtMs: lock.ttlMs === null ? NEVER : receivedAtMs + lock.ttlMs,
    sinceMs: Number.isNaN(since) ? 0 : since,
    waiters: queueLength(lock),
    hazardScore: lock.hazards.length === 0 ? 0 : worst * 1000 + Math.min(lock.hazards.length, 999),
    pattern: intern(keyPattern(lock.resource)),
  };
}

/** The lock as of `atMs`: its TTL counted down on the dashboard's clock, and when the dashboard received it. */
export function currentLock(e: IndexedLock, atMs: number): Lock {
  const receivedAt = new Date(e.receivedAtMs).toISOString();
  if (e.lock.ttlMs === null) return { ...e.lock, receivedAt };
  return { ...e.lock, ttlMs: Math.max(0, e.lock.ttlMs - (atMs - e.receivedAtMs)), receivedAt };
}

export function matches(e: IndexedLock, f: LockFilter): boolean {
  const l = e.lock;
  if (f.id !== undefined && l.id !== f.id) return false;
  if (f.backend !== undefined && l.backend !== f.backend) return false;
  if (f.source !== undefined && l.source !== f.source) return false;
  if (f.library !== undefined && l.library !== f.library) return false;
  if (f.pattern !== undefined && e.pattern !== f.pattern) return false;
  if (f.hazard !== undefined) {
    if (f.hazard === "any" ? l.hazards.length === 0 : !l.hazards.some((h) => h.code === f.hazard)) return false;
  }
  // q was lower-cased by the parser. Field by field: q never spans two fields (it cannot contain a separator).
  if (f.q !== undefined && !matchesText(e, f.q)) return false;
  return true;
}

function matchesText(e: IndexedLock, q: string): boolean {
  return (
    e.resourceLc.includes(q) ||
    e.ownerLc.includes(q) ||
    sharedIncludes(e.lock.source, q, lastSource) ||
    sharedIncludes(e.lock.library, q, lastLibrary)
  );
}

export function sortValue(e: IndexedLock, key: SortKey): string | number {
  switch (key) {
    case "resource":
      return e.lock.resource;
    case "ttl":
      return e.expiresAtMs;
    case "held":
      // Held longest = acquired earliest: ascending hold time is descending `since`.
      return -e.sinceMs;
    case "waiters":
      return e.waiters;
    case "hazards":
      return e.hazardScore;
  }
}

function cmp(a: string | number, b: string | number): number {
  // A cursor from a string sort never meets a number sort (the parser checks its sort), but be total anyway.
  if (typeof a !== typeof b) return typeof a === "number" ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The hazards sort breaks its many ties (every lock without a hazard) by resource, against the sort's direction:
 * the table's default `-hazards` reads "hazardous first, then by name A to Z", not the order locks arrived in. One
 * total order read either way, so the kept sorted orders (lock-order.ts) serve both directions from one array.
 */
export function resourceTie(key: SortKey, a: string, b: string): number {
  if (key !== "hazards" || a === b) return 0;
  return a < b ? 1 : -1;
}

function tiesByResource(sort: LockSort): boolean {
  return sort.key === "hazards";
}

function afterCursor(e: IndexedLock, value: string | number, sort: LockSort, c: Cursor): boolean {
  const dir = sort.desc ? -1 : 1;
  const byValue = dir * cmp(value, c.value);
  if (byValue !== 0) return byValue > 0;
  if (tiesByResource(sort) && c.resource !== undefined) {
    const byName = dir * resourceTie(sort.key, e.lock.resource, c.resource);
    if (byName !== 0) return byName > 0;
  }
  return dir * (e.seq - c.seq) > 0;
}

/** Keeps the k smallest items under `compare`: a max-heap of size k, O(n log k) for n offered. */
class SmallestK<T> {
  private readonly heap: T[] = [];
  constructor(
    private readonly k: number,
    private readonly compare: (a: T, b: T) => number,
  ) {}

  offer(x: T): void {
    if (this.k === 0) return;
    const h = this.heap;
    if (h.length < this.k) {
      h.push(x);
      let i = h.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (this.compare(h[i]!, h[p]!) <= 0) break;
        [h[i], h[p]] = [h[p]!, h[i]!];
        i = p;
      }
      return;
    }
    if (this.compare(x, h[0]!) >= 0) return;
    h[0] = x;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.compare(h[l]!, h[m]!) > 0) m = l;
      if (r < h.length && this.compare(h[r]!, h[m]!) > 0) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }

  sorted(): T[] {
    return [...this.heap].sort(this.compare);
  }
}

export interface QueryResult {
  /** Locks matching the filter (all pages). */
  total: number;
  counts: LockCounts;
  /** The page, in sort order. */
  page: IndexedLock[];
  /** Opaque position after the page's last row; null when nothing follows. */
  nextCursor: string | null;
}

/** Above this share of the matches, sorting them all beats a heap of the page's size. */
const HEAP_SHARE = 0.25;

/**
 * Filters, counts and pages in one pass over the locks. The sort values are read once per match into flat arrays,
 * so the selection compares primitives, not entries: a page of 100 of 100,000 locks is a few milliseconds.
 */
export function runQuery(all: Iterable<IndexedLock>, q: LockQuery): QueryResult {
  const key = q.sort.key;
  const dir = q.sort.desc ? -1 : 1;
  const values: Array<string | number> = [];
  const seqs: number[] = [];
  const entries: IndexedLock[] = [];
  const byBackend: Record<string, number> = {};
  const byHazard: Record<string, number> = {};
  let total = 0;
  for (const e of all) {
    if (!matches(e, q.filter)) continue;
    total++;
    byBackend[e.lock.backend] = (byBackend[e.lock.backend] ?? 0) + 1;
    const hazards = e.lock.hazards;
    if (hazards.length === 1) byHazard[hazards[0]!.code] = (byHazard[hazards[0]!.code] ?? 0) + 1;
    else if (hazards.length > 1) {
      // A lock counts once per hazard code, even if it carries the code twice.
      for (const code of new Set(hazards.map((h) => h.code))) byHazard[code] = (byHazard[code] ?? 0) + 1;
    }
    const v = sortValue(e, key);
    if (q.cursor && !afterCursor(e, v, q.sort, q.cursor)) continue;
    values.push(v);
    seqs.push(e.seq);
    entries.push(e);
  }
  const byName = tiesByResource(q.sort);
  const compare = (a: number, b: number): number => {
    const va = values[a]!;
    const vb = values[b]!;
    if (va !== vb) return dir * (va < vb ? -1 : 1);
    if (byName) {
      const t = resourceTie(key, entries[a]!.lock.resource, entries[b]!.lock.resource);
      if (t !== 0) return dir * t;
    }
    return dir * (seqs[a]! - seqs[b]!);
  };
  // One extra row tells whether a next page exists without a second pass.
  const k = q.offset + q.limit + 1;
  let order: number[];
  if (k >= entries.length * HEAP_SHARE) {
    order = Array.from({ length: entries.length }, (_, i) => i).sort(compare);
    order.length = Math.min(order.length, k);
  } else {
    const keep = new SmallestK<number>(k, compare);
    // Offered best-first where the tie-breaker allows: ties (a fleet of equal leases) then fail the heap's cheap
    // first comparison instead of each replacing its top.
    if (dir > 0) for (let i = 0; i < entries.length; i++) keep.offer(i);
    else for (let i = entries.length - 1; i >= 0; i--) keep.offer(i);
    order = keep.sorted();
  }
  const rows = order.slice(q.offset);
  const pageIdx = rows.slice(0, q.limit);
  const page = pageIdx.map((i) => entries[i]!);
  const last = pageIdx[pageIdx.length - 1];
  const nextCursor =
    rows.length > q.limit && last !== undefined
      ? encodeCursor(q.sort, {
          value: values[last]!,
          seq: seqs[last]!,
          ...(byName ? { resource: entries[last]!.lock.resource } : {}),
        })
      : null;
  return { total, counts: { byBackend, byHazard }, page, nextCursor };
}
