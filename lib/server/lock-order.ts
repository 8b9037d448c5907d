/**
 * Sorted orders of the live locks kept between queries, so a page of 100 of 100,000 locks costs a binary search and
 * the page (O(log n + page)) instead of a pass and a selection over every lock. One ascending array per sort key
 * (descending is the same array read backwards: the order is (value, seq), seq being unique; the hazards order's
 * ties go by resource first, see resourceTie), patched with the
 * changes since the last read (by the next query, or in bulk after a large message), and the counts of all locks
 * kept incrementally. Pure.
 */
import type { LockCounts } from "../contract/api";
import {
  lowerShared,
  matches,
  resourceTie,
  runQuery,
  sortValue,
  type IndexedLock,
  type QueryResult,
} from "./lock-index";
import { LockText } from "./lock-text";
import { encodeCursor, SORT_KEYS, type Cursor, type LockFilter, type LockQuery, type SortKey } from "./lock-query";

/** At most this many pending changes are applied one by one (binary search and splice); more are merged in one pass. */
const SPLICE_LIMIT = 64;

function compareEntries(key: SortKey, a: IndexedLock, b: IndexedLock): number {
  const va = sortValue(a, key);
  const vb = sortValue(b, key);
  return va < vb ? -1 : va > vb ? 1 : resourceTie(key, a.lock.resource, b.lock.resource) || a.seq - b.seq;
}

/** -1, 0 or 1: where (value, seq) stands against the cursor, ascending. */
function compareToCursor(key: SortKey, e: IndexedLock, c: Cursor): number {
  const v = sortValue(e, key);
  // A cursor from a string sort never meets a number sort (the parser checks its sort), but be total anyway.
  if (typeof v !== typeof c.value) return typeof v === "number" ? -1 : 1;
  if (v !== c.value) return v < c.value ? -1 : 1;
  const tie = c.resource === undefined ? 0 : resourceTie(key, e.lock.resource, c.resource);
  return tie || Math.sign(e.seq - c.seq);
}

/** The first index whose entry is not `below` (the array is partitioned: every `below` entry comes first). */
function lowerBound(arr: IndexedLock[], below: (e: IndexedLock) => boolean): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (below(arr[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Pending changes beyond this are merged when the owner settles (after each agent message) rather than by the next
 * query: the first query after a 100,000-lock snapshot would otherwise sort them all (60-85 ms per sort here).
 */
const SETTLE_AT = 2000;

class SortedOrder {
  /** Empty, not absent, from the start: every order is kept from the first lock, so no query pays a full sort. */
  private arr: IndexedLock[] = [];
  private readonly added = new Set<IndexedLock>();
  private readonly removed = new Set<IndexedLock>();

  constructor(private readonly key: SortKey) {}

  get pending(): number {
    return this.added.size + this.removed.size;
  }

  add(e: IndexedLock): void {
    this.added.add(e);
  }

  remove(e: IndexedLock): void {
    // Added and gone again before any query read the order: it never entered the array.
    if (!this.added.delete(e)) this.removed.add(e);
  }

  /** The ascending order, with every change applied. */
  read(): IndexedLock[] {
    const cmp = (a: IndexedLock, b: IndexedLock) => compareEntries(this.key, a, b);
    if (this.added.size === 0 && this.removed.size === 0) return this.arr;
    const arr = this.arr;
    if (this.added.size + this.removed.size <= SPLICE_LIMIT) {
      for (const e of this.removed) {
        const i = lowerBound(arr, (x) => cmp(x, e) < 0);
        if (arr[i] === e) arr.splice(i, 1);
      }
      for (const e of this.added)
        arr.splice(
          lowerBound(arr, (x) => cmp(x, e) < 0),
          0,
          e,
        );
    } else {
      // One merge of the kept entries with the sorted additions: O(n + k log k), no sort of every lock.
      const adds = [...this.added].sort(cmp);
      const out: IndexedLock[] = new Array<IndexedLock>(arr.length - this.removed.size + adds.length);
      let n = 0;
      let j = 0;
      for (const x of arr) {
        if (this.removed.size > 0 && this.removed.has(x)) continue;
        while (j < adds.length && cmp(adds[j]!, x) < 0) out[n++] = adds[j++]!;
        out[n++] = x;
      }
      while (j < adds.length) out[n++] = adds[j++]!;
      out.length = n;
      this.arr = out;
    }
    this.added.clear();
    this.removed.clear();
    return this.arr;
  }
}

function addCounts(counts: { byBackend: Record<string, number>; byHazard: Record<string, number> }, e: IndexedLock) {
  const l = e.lock;
  counts.byBackend[l.backend] = (counts.byBackend[l.backend] ?? 0) + 1;
  if (l.hazards.length === 1) counts.byHazard[l.hazards[0]!.code] = (counts.byHazard[l.hazards[0]!.code] ?? 0) + 1;
  else if (l.hazards.length > 1) {
    // A lock counts once per hazard code, even if it carries the code twice.
    for (const code of new Set(l.hazards.map((h) => h.code))) counts.byHazard[code] = (counts.byHazard[code] ?? 0) + 1;
  }
}

function subtract(record: Record<string, number>, key: string): void {
  const n = (record[key] ?? 0) - 1;
  if (n > 0) record[key] = n;
  else delete record[key];
}

function bump(record: Map<string, number>, key: string, by: number): void {
  const n = (record.get(key) ?? 0) + by;
  if (n > 0) record.set(key, n);
  else record.delete(key);
}

/**
 * A substring filter matching at most this many locks is answered from the text index and a sort of the matches;
 * more are read in the kept order (one pass, no sort).
 */
const MAX_TEXT_MATCHES = 5000;

function isEmpty(f: LockFilter): boolean {
  for (const v of Object.values(f)) if (v !== undefined) return false;
  return true;
}

/**
 * The orders and counts of a set of indexed locks. The owner reports every entry that enters (`add`) and leaves
 * (`remove`); an upsert is the old entry removed and the new one added (entries are never changed in place, so an
 * entry's sort values are the ones it was filed under).
 */
export class LockOrder {
  private readonly orders = new Map<SortKey, SortedOrder>(SORT_KEYS.map((k) => [k, new SortedOrder(k)]));
  private readonly counts = { byBackend: {} as Record<string, number>, byHazard: {} as Record<string, number> };
  private count = 0;
  /** The substring filter's index of resources and owners, built by the first search. */
  private readonly text = new LockText();
  /** How many locks carry each source and library: the filter also matches those, one value at a time. */
  private readonly sources = new Map<string, number>();
  private readonly libraries = new Map<string, number>();

  constructor(
    /** Entries by lock id, for a filter on one id (the detail page's view). */
    private readonly byId: (id: string) => IndexedLock[],
  ) {}

  add(e: IndexedLock): void {
    this.count++;
    addCounts(this.counts, e);
    bump(this.sources, e.lock.source, 1);
    bump(this.libraries, e.lock.library, 1);
    this.text.add(e);
    for (const o of this.orders.values()) o.add(e);
  }

  remove(e: IndexedLock): void {
    this.count--;
    const l = e.lock;
    subtract(this.counts.byBackend, l.backend);
    for (const code of new Set(l.hazards.map((h) => h.code))) subtract(this.counts.byHazard, code);
    bump(this.sources, l.source, -1);
    bump(this.libraries, l.library, -1);
    this.text.remove(e);
    for (const o of this.orders.values()) o.remove(e);
  }

  /**
   * The locks a substring filter can match, from the text index: null when a source or library matches it (then
   * every lock of that value does) or when too many locks do.
   */
  private textMatches(q: string): IndexedLock[] | null {
    for (const v of this.sources.keys()) if (lowerShared(v).includes(q)) return null;
    for (const v of this.libraries.keys()) if (lowerShared(v).includes(q)) return null;
    return this.text.search(q, MAX_TEXT_MATCHES, () => this.orders.get("resource")!.read());
  }

  /**
   * Applies the pending changes of one order once they are many (the owner calls it after each message): of the
   * orders with SETTLE_AT or more, the one with the most. One merge per message, not five: during a 100,000-lock
   * snapshot, five merges over every lock after one part held the event loop five times as long, and an order
   * merged less often merges more changes in one pass over the array (fewer passes in all). The others follow
   * after the next messages; a query before that applies what its own order has pending. Returns the order merged.
   */
  settle(): SortKey | null {
    let due: SortKey | null = null;
    let most = SETTLE_AT - 1;
    for (const [key, o] of this.orders) {
      if (o.pending > most) {
        due = key;
        most = o.pending;
      }
    }
    if (due) this.orders.get(due)!.read();
    return due;
  }

  /** The entries acquired before `sinceMs`, held longest first: the tail of the order by hold time. */
  heldSince(sinceMs: number): IndexedLock[] {
    const arr = this.orders.get("held")!.read();
    const out: IndexedLock[] = [];
    // Ascending hold time is descending `since`: the longest held are at the end.
    for (let i = arr.length - 1; i >= 0 && arr[i]!.sinceMs < sinceMs; i--) out.push(arr[i]!);
    return out;
  }

  /** The same answer as runQuery over every entry, from the kept order. */
  query(q: LockQuery): QueryResult {
    if (q.filter.id !== undefined) return runQuery(this.byId(q.filter.id), q);
    if (q.filter.q !== undefined) {
      // A few matches out of many: sorting them beats a pass over every lock in order.
      const few = this.textMatches(q.filter.q);
      if (few) return runQuery(few, q);
    }
    const key = q.sort.key;
    const arr = this.orders.get(key)!.read();
    const desc = q.sort.desc;
    const c = q.cursor;
    // Ascending: the rows after the cursor start at its upper bound. Descending, read backwards: they start just
    // below its lower bound.
    let start: number;
    if (desc) start = (c ? lowerBound(arr, (x) => compareToCursor(key, x, c) < 0) : arr.length) - 1;
    else start = c ? lowerBound(arr, (x) => compareToCursor(key, x, c) <= 0) : 0;
    const step = desc ? -1 : 1;
    const want = q.offset + q.limit + 1;
    const rows: IndexedLock[] = [];
    let total: number;
    let counts: LockCounts;
    if (isEmpty(q.filter)) {
      total = this.count;
      counts = { byBackend: { ...this.counts.byBackend }, byHazard: { ...this.counts.byHazard } };
      for (let i = start; i >= 0 && i < arr.length && rows.length < want; i += step) rows.push(arr[i]!);
    } else {
      // A filter (a substring, a hazard) has no index: one pass counts the matches, in order, and keeps the page.
      counts = { byBackend: {}, byHazard: {} };
      total = 0;
      const f = q.filter;
      for (let i = desc ? arr.length - 1 : 0; i >= 0 && i < arr.length; i += step) {
        const e = arr[i]!;
        if (!matches(e, f)) continue;
        total++;
        addCounts(counts, e);
        if (rows.length < want && (desc ? i <= start : i >= start)) rows.push(e);
      }
    }
    const page = rows.slice(q.offset, q.offset + q.limit);
    const last = page[page.length - 1];
    const nextCursor =
      rows.length > q.offset + q.limit && last !== undefined
        ? encodeCursor(q.sort, {
            value: sortValue(last, key),
            seq: last.seq,
            ...(key === "hazards" ? { resource: last.lock.resource } : {}),
          })
        : null;
    return { total, counts, page, nextCursor };
  }
}
