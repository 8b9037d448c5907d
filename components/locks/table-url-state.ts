/**
 * The locks table's view as URL parameters, so an incident link opens the same view and a reload keeps it:
 * `q`, `backend`, `hazardsOnly=1`, `sort` (as GET /api/locks names it; omitted when it is the default) and the
 * drill-down filters links carry (`pattern`, `source`, `library`, `hazard`). Anything malformed falls back to the
 * default for that parameter only: a mangled link still opens a useful table. Pure.
 */
import { BACKENDS } from "../../lib/contract/lock";

export const SORT_KEYS = ["resource", "ttl", "held", "waiters", "hazards"] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export interface TableSort {
  key: SortKey;
  desc: boolean;
}

/** Hazardous locks first, worst first (the server breaks ties by resource): what an operator looks for first. */
export const DEFAULT_SORT: TableSort = { key: "hazards", desc: true };

export const LINK_FILTERS = ["pattern", "source", "library", "hazard"] as const;
export type LinkFilters = Partial<Record<(typeof LINK_FILTERS)[number], string>>;

export interface TableState {
  q: string;
  /** A backend name, or "all". */
  backend: string;
  hazardsOnly: boolean;
  sort: TableSort;
  links: LinkFilters;
}

/** The API refuses longer values (lock-query.ts): a link never makes the view fail. */
const MAX_Q = 256;
const MAX_VALUE = 4096;

export function parseSort(raw: string | null | undefined): TableSort {
  if (!raw) return DEFAULT_SORT;
  const desc = raw.startsWith("-");
  const key = desc ? raw.slice(1) : raw;
  return (SORT_KEYS as readonly string[]).includes(key) ? { key: key as SortKey, desc } : DEFAULT_SORT;
}

export function sortName(s: TableSort): string {
  return `${s.desc ? "-" : ""}${s.key}`;
}

/** Reads the view from the URL's parameters (the first of a repeated parameter). */
export function parseTableState(params: { get(name: string): string | null }): TableState {
  const q = (params.get("q") ?? "").slice(0, MAX_Q);
  const b = params.get("backend");
  const backend = b !== null && (BACKENDS as readonly string[]).includes(b) ? b : "all";
  const h = params.get("hazardsOnly");
  const links: LinkFilters = {};
  for (const k of LINK_FILTERS) {
    const v = params.get(k);
    if (v && v.length <= MAX_VALUE) links[k] = v;
  }
  return { q, backend, hazardsOnly: h === "1" || h === "true", sort: parseSort(params.get("sort")), links };
}

/** The parameters of a view, defaults left out, in a fixed order (one view, one URL). */
export function serializeTableState(s: TableState): string {
  const p = new URLSearchParams();
  if (s.q.trim() !== "") p.set("q", s.q.trim());
  if (s.backend !== "all") p.set("backend", s.backend);
  if (s.hazardsOnly) p.set("hazardsOnly", "1");
  const sort = sortName(s.sort);
  if (sort !== sortName(DEFAULT_SORT)) p.set("sort", sort);
  for (const k of LINK_FILTERS) {
    const v = s.links[k];
    if (v) p.set(k, v);
  }
  return p.toString();
}

/** The next sort when a column header is clicked: the same column flips, another starts worst/most first. */
export function nextSort(current: TableSort, key: SortKey): TableSort {
  if (current.key === key) return { key, desc: !current.desc };
  return { key, desc: key === "hazards" || key === "held" || key === "waiters" };
}
