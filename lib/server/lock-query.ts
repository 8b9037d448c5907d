/**
 * The query language of the live locks (`GET /api/locks` and the browsers' view subscriptions): parameters in,
 * a validated query out, or the parameter that is wrong and why (a 400 that names it). Pure.
 */
import { BACKENDS } from "../contract/lock";

export const SORT_KEYS = ["resource", "ttl", "held", "waiters", "hazards"] as const;
export type SortKey = (typeof SORT_KEYS)[number];

/** Backends a filter may name: the contract's one list (re-exported for the callers of this module). */
export { BACKENDS };

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;
/** Offsets serve a scrolled window of the virtualized table; beyond this a caller pages with cursors. */
export const MAX_OFFSET = 1_000_000;
const MAX_VALUE = 4096;
const MAX_Q = 256;

export interface LockFilter {
  /** Case-insensitive substring of resource, owner, source or library. */
  q?: string;
  backend?: string;
  library?: string;
  source?: string;
  /** A hazard code, or `any` for a lock with at least one hazard. */
  hazard?: string;
  /** A key pattern as the fleet overview derives it (`lock:order:*`). */
  pattern?: string;
  /** One lock (the detail page's subscription). */
  id?: string;
}

export interface LockSort {
  key: SortKey;
  desc: boolean;
}

/**
 * A position in one sort order: the last row's sort value and its tie-breaker, the dashboard's sequence number of
 * the lock (keyset paging: stable while locks come and go).
 */
export interface Cursor {
  value: string | number;
  seq: number;
  /** The row's resource, for a sort whose ties go by resource (hazards) before the sequence number. */
  resource?: string;
}

export interface LockQuery {
  filter: LockFilter;
  sort: LockSort;
  limit: number;
  cursor: Cursor | null;
  offset: number;
}

export type ParsedQuery = { ok: true; query: LockQuery } | { ok: false; param: string; error: string };

const FILTER_PARAMS = ["q", "backend", "library", "source", "hazard", "pattern", "id"] as const;
const KNOWN = new Set<string>([...FILTER_PARAMS, "sort", "limit", "cursor", "offset"]);

export function sortName(sort: LockSort): string {
  return `${sort.desc ? "-" : ""}${sort.key}`;
}

export function encodeCursor(sort: LockSort, c: Cursor): string {
  const parts: unknown[] = [sortName(sort), c.value, c.seq];
  if (c.resource !== undefined) parts.push(c.resource);
  return Buffer.from(JSON.stringify(parts)).toString("base64url");
}

function decodeCursor(raw: string, sort: LockSort): Cursor | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    return "cursor is not one this API gave out (pass nextCursor unchanged)";
  }
  if (
    !Array.isArray(parsed) ||
    (parsed.length !== 3 && parsed.length !== 4) ||
    typeof parsed[0] !== "string" ||
    (typeof parsed[1] !== "string" && typeof parsed[1] !== "number") ||
    typeof parsed[2] !== "number" ||
    (parsed.length === 4 && typeof parsed[3] !== "string")
  ) {
    return "cursor is not one this API gave out (pass nextCursor unchanged)";
  }
  if (parsed[0] !== sortName(sort)) return `cursor belongs to sort=${parsed[0]}, not sort=${sortName(sort)}`;
  const cursor: Cursor = { value: parsed[1] as string | number, seq: parsed[2] as number };
  if (parsed.length === 4) cursor.resource = parsed[3] as string;
  return cursor;
}

function wholeNumber(raw: string, name: string, min: number, max: number): number | string {
  if (!/^\d{1,9}$/.test(raw)) return `${name} must be a whole number from ${min} to ${max}`;
  const n = Number(raw);
  if (n < min || n > max) return `${name} must be a whole number from ${min} to ${max}`;
  return n;
}

/**
 * Parses query parameters. Unknown or repeated parameters are refused rather than ignored: a typo (`hazrd=any`)
 * would otherwise silently answer with every lock.
 */
export function parseLockQuery(params: Iterable<[string, string]>): ParsedQuery {
  const seen = new Map<string, string>();
  for (const [name, value] of params) {
    if (!KNOWN.has(name)) {
      return { ok: false, param: name, error: `unknown parameter ${name}; known: ${[...KNOWN].join(", ")}` };
    }
    if (seen.has(name)) return { ok: false, param: name, error: `${name} is given more than once` };
    if (value.length > MAX_VALUE) return { ok: false, param: name, error: `${name} is longer than ${MAX_VALUE}` };
    seen.set(name, value);
  }
  const bad = (param: string, error: string): ParsedQuery => ({ ok: false, param, error });

  const filter: LockFilter = {};
  for (const name of FILTER_PARAMS) {
    const v = seen.get(name);
    // An empty value means "no filter", as an empty search box does.
    if (v !== undefined && v !== "") filter[name] = v;
  }
  if (filter.q !== undefined) {
    if (filter.q.length > MAX_Q) return bad("q", `q is longer than ${MAX_Q} characters`);
    filter.q = filter.q.toLowerCase();
  }
  if (filter.backend !== undefined && !(BACKENDS as readonly string[]).includes(filter.backend)) {
    return bad("backend", `backend must be one of ${BACKENDS.join(", ")}`);
  }
  if (filter.hazard !== undefined && !/^[a-z0-9][a-z0-9-]{0,63}$/.test(filter.hazard)) {
    return bad("hazard", "hazard must be a hazard code (like no-ttl) or any");
  }
  if (filter.id !== undefined && !/^[A-Za-z0-9_-]{1,128}$/.test(filter.id)) {
    return bad("id", "id must be URL-safe (A-Z a-z 0-9 _ -)");
  }

  const rawSort = seen.get("sort") || "resource";
  const desc = rawSort.startsWith("-");
  const key = desc ? rawSort.slice(1) : rawSort;
  if (!(SORT_KEYS as readonly string[]).includes(key)) {
    return bad("sort", `sort must be one of ${SORT_KEYS.join(", ")}, with - for descending`);
  }
  const sort: LockSort = { key: key as SortKey, desc };

  let limit = DEFAULT_LIMIT;
  const rawLimit = seen.get("limit");
  if (rawLimit !== undefined) {
    const n = wholeNumber(rawLimit, "limit", 0, MAX_LIMIT);
    if (typeof n === "string") return bad("limit", n);
    limit = n;
  }
  let offset = 0;
  const rawOffset = seen.get("offset");
  if (rawOffset !== undefined) {
    const n = wholeNumber(rawOffset, "offset", 0, MAX_OFFSET);
    if (typeof n === "string") return bad("offset", n);
    offset = n;
  }
  let cursor: Cursor | null = null;
  const rawCursor = seen.get("cursor");
  if (rawCursor) {
    if (rawOffset !== undefined) return bad("cursor", "give cursor or offset, not both");
    const c = decodeCursor(rawCursor, sort);
    if (typeof c === "string") return bad("cursor", c);
    cursor = c;
  }
  return { ok: true, query: { filter, sort, limit, cursor, offset } };
}
