"use client";

import { useVirtualizer } from "@tanstack/react-virtual";
import Link from "next/link";
import { usePathname, useSearchParams } from "next/navigation";
import { memo, useEffect, useMemo, useRef, useState } from "react";
import { BACKEND_LABELS, BACKENDS } from "@/lib/contract/lock";
import type { LockViewQuery } from "@/lib/contract/socket";
import { queueLength } from "@/lib/contract/lock-queue";
import { useLiveLocks, useLockView, useNow, type LiveLock } from "../live/live-locks-provider";
import { BackendLabel } from "../redlock/quorum-badge";
import { formatDuration, remainingTtl, shorten } from "./format";
import { HazardBadges } from "./hazard-badges";
import { TtlCell } from "./ttl-cell";
import { HazardsOnlyToggle, SearchFilter } from "../ui/list-filters";
import { FADE_MS, goneLockIds, mergeLeaving, pruneLeaving, updateLeaving, type LeavingRow } from "./leaving-rows";
import { LockCard } from "./lock-card";
import { SourceText } from "./source-text";
import {
  nextSort,
  parseTableState,
  serializeTableState,
  sortName,
  type SortKey,
  type TableState,
} from "./table-url-state";
import { useMediaQuery } from "./use-media-query";

const COLUMNS: Array<{ label: string; sort?: SortKey; className: string }> = [
  { label: "Resource", sort: "resource", className: "w-[26%]" },
  { label: "Backend", className: "w-[9%]" },
  { label: "Source", className: "w-[13%]" },
  { label: "Owner", className: "w-[14%]" },
  { label: "Library", className: "w-[9%]" },
  { label: "TTL", sort: "ttl", className: "w-[10%]" },
  { label: "Held for", sort: "held", className: "w-[7%]" },
  { label: "Waiters", sort: "waiters", className: "w-[5%] text-right" },
  { label: "Hazards", sort: "hazards", className: "w-[7%]" },
];

const ROW_HEIGHT = 33;
/** A card's first guess; each card is measured once drawn (hazard badges and long owners wrap). */
const CARD_HEIGHT = 104;
/**
 * The table subscribes to a window of rows around what is visible, in steps of CHUNK, so scrolling a screen or two
 * never re-subscribes and a jump (a dragged scrollbar) costs one small window, never the whole list.
 */
const CHUNK = 100;
const WINDOW = 3 * CHUNK;
/** Typing settles before the URL follows (history.replaceState, no history entry per keystroke). */
const URL_DEBOUNCE_MS = 300;
/** Below Tailwind's `sm`: rows become cards. */
const NARROW = "(max-width: 639px)";

/** The remaining lease, counted down by its own clock: a tick re-renders this cell, not the table. */
function LiveTtl({ ttlMs, receivedAt }: { ttlMs: number | null; receivedAt: number }) {
  const now = useNow(250);
  return (
    <TtlCell remaining={remainingTtl(ttlMs, receivedAt, now)} total={ttlMs === null ? null : Math.max(ttlMs, 1)} />
  );
}

function HeldFor({ since }: { since: string }) {
  const now = useNow(1000);
  return <>{formatDuration(Math.max(0, now - Date.parse(since)))}</>;
}

const LockRow = memo(function LockRow({ live, index, leaving }: { live: LiveLock; index: number; leaving: boolean }) {
  const { lock, receivedAt } = live;
  return (
    <tr
      className={`h-[33px] hover:bg-slate-900/60 ${leaving ? "release-fade" : ""}`}
      data-testid={leaving ? "lock-row-released" : "lock-row"}
      data-lock-id={lock.id}
      data-index={index}
    >
      <td className="truncate px-3 py-1.5 font-mono">
        {/* No prefetch: each new window of rows (a keystroke in the filter) asked the dashboard for the visible
            rows' detail routes, rendered on the event loop that also serves the live views. */}
        <Link
          href={`/locks/${lock.id}`}
          prefetch={false}
          className="text-sky-300 hover:underline"
          title={lock.resource}
        >
          {lock.resource}
        </Link>
      </td>
      <td className="truncate px-3 py-1.5 text-slate-400">
        <BackendLabel lock={lock} />
      </td>
      <td className="overflow-hidden px-3 py-1.5 text-slate-400">
        <SourceText source={lock.source} />
      </td>
      <td className="truncate px-3 py-1.5 font-mono text-xs" title={lock.owner ?? "unknown"}>
        {shorten(lock.owner, 28)}
      </td>
      <td className="truncate px-3 py-1.5 text-slate-300" title={`rule: ${lock.rule}`}>
        {lock.library}
      </td>
      <td className="px-3 py-1.5">
        {leaving ? (
          <span className="text-xs italic text-slate-300" data-testid="released-label">
            released
          </span>
        ) : (
          <LiveTtl ttlMs={lock.ttlMs} receivedAt={receivedAt} />
        )}
      </td>
      <td className="px-3 py-1.5 font-mono tabular-nums text-slate-400">
        <HeldFor since={lock.since} />
      </td>
      <td className="px-3 py-1.5 text-right tabular-nums" data-testid="waiters-count">
        {queueLength(lock) || ""}
      </td>
      <td className="overflow-hidden px-3 py-1.5">
        <HazardBadges hazards={lock.hazards} />
      </td>
    </tr>
  );
});

/** A row of the view that is not loaded yet (scrolled to faster than its window arrived). */
function PlaceholderRow({ index }: { index: number }) {
  return (
    <tr className="h-[33px]" data-testid="lock-row-pending" data-index={index}>
      <td colSpan={COLUMNS.length} className="px-3 py-1.5 text-slate-400">
        …
      </td>
    </tr>
  );
}

/** Sources whose agent hit MAX_LOCKS_PER_SOURCE: the table shows what is tracked and says how much is not. */
function TruncationBanner() {
  const { sources } = useLiveLocks();
  const capped = sources.filter((s) => (s.untracked ?? 0) > 0);
  if (capped.length === 0) return null;
  return (
    <div className="mb-3 space-y-1 rounded border border-rose-700/60 bg-rose-950/40 px-3 py-2 text-sm text-rose-200">
      {capped.map((s) => (
        <p key={`${s.agentId}-${s.id}`} data-testid="truncated-source">
          Showing {s.locks.toLocaleString("en")} of {(s.locks + (s.untracked ?? 0)).toLocaleString("en")} locks of{" "}
          <span className="font-mono">{s.id}</span>:{" "}
          {s.hazards?.find((h) => h.code === "too-many-locks")?.message ??
            "the agent tracks at most MAX_LOCKS_PER_SOURCE locks per source."}
        </p>
      ))}
    </div>
  );
}

/** What the table drew when the operator paused it. */
interface Frozen {
  rows: LiveLock[];
  offset: number;
  total: number;
}

/** Changes the live view has that the paused table does not show: rows changed, new, or gone from the window. */
function waitingChanges(frozen: Frozen, live: { rows: LiveLock[]; offset: number }): number {
  const held = new Map(frozen.rows.map((r) => [r.lock.id, r]));
  let n = 0;
  const liveIds = new Set<string>();
  for (const r of live.rows) {
    liveIds.add(r.lock.id);
    // Rows are replaced only when the dashboard sends them again: identity means "unchanged".
    if (held.get(r.lock.id) !== r && live.offset === frozen.offset) n++;
  }
  if (live.offset === frozen.offset) for (const id of held.keys()) if (!liveIds.has(id)) n++;
  return n;
}

/**
 * The table's view (filters, sort) lives in the URL, so a shared incident link or a reload opens the same view.
 * Typing shows at once and reaches the URL when it settles; a change of the URL from outside (a drill-down link,
 * back and forward) is followed.
 */
function useUrlTableState(): [TableState, (update: (s: TableState) => TableState) => void] {
  const params = useSearchParams();
  const pathname = usePathname();
  const [state, setState] = useState<TableState>(() => parseTableState(params));
  const written = useRef(params.toString());

  useEffect(() => {
    const qs = params.toString();
    if (qs === written.current) return;
    written.current = qs;
    setState(parseTableState(params));
  }, [params]);

  useEffect(() => {
    const qs = serializeTableState(state);
    if (qs === written.current) return;
    const t = setTimeout(() => {
      written.current = qs;
      // The native history call, which Next.js folds into useSearchParams: router.replace would fetch the page
      // from the server again for each settled keystroke (dynamic pages), competing with the live view.
      window.history.replaceState(window.history.state, "", qs ? `${pathname}?${qs}` : pathname);
    }, URL_DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [state, pathname]);

  return [state, setState];
}

export function LocksTable() {
  const { connection, recentEvents } = useLiveLocks();
  const [state, update] = useUrlTableState();
  const { q: query, backend, hazardsOnly, sort, links: linkFilters } = state;
  const [windowStart, setWindowStart] = useState(0);
  const [frozen, setFrozen] = useState<Frozen | null>(null);
  const [leaving, setLeaving] = useState<LeavingRow[]>([]);
  const scrollRef = useRef<HTMLDivElement>(null);
  const narrow = useMediaQuery(NARROW);

  // A new view of the locks is live: changing a filter or the sort while paused resumes.
  const change = (f: (s: TableState) => TableState) => {
    setFrozen(null);
    update(f);
  };

  const filter = useMemo(() => {
    const f: LockViewQuery = { ...linkFilters, sort: sortName(sort) };
    if (query.trim()) f.q = query.trim();
    if (backend !== "all") f.backend = backend;
    if (hazardsOnly && !f.hazard) f.hazard = "any";
    return f;
  }, [linkFilters, query, backend, hazardsOnly, sort]);
  const filterKey = JSON.stringify(filter);

  // A new filter or sort starts at the top.
  useEffect(() => {
    setWindowStart(0);
    scrollRef.current?.scrollTo({ top: 0 });
  }, [filterKey]);

  const view = useLockView({ ...filter, offset: windowStart, limit: WINDOW });

  // Released rows stay a moment, fading, where they were: only rows this window showed, and only when the pushed
  // events say the lock is gone (a row that merely scrolled or sorted out of the window leaves at once).
  const gone = useMemo(() => goneLockIds(recentEvents), [recentEvents]);
  const goneRef = useRef(gone);
  useEffect(() => {
    goneRef.current = gone;
  }, [gone]);
  const shown = useRef<{ rows: LiveLock[]; offset: number; key: string } | null>(null);
  const viewKey = `${filterKey}@${windowStart}`;
  useEffect(() => {
    const prev = shown.current;
    shown.current = { rows: view.rows, offset: view.offset, key: viewKey };
    if (!prev || prev.key !== viewKey || prev.offset !== view.offset) {
      setLeaving([]);
      return;
    }
    if (prev.rows === view.rows) return;
    setLeaving((l) => updateLeaving(l, prev, view.rows, (id) => goneRef.current.has(id), Date.now()));
  }, [view.rows, view.offset, viewKey]);
  useEffect(() => {
    if (leaving.length === 0) return;
    const next = Math.min(...leaving.map((l) => l.leftAt)) + FADE_MS - Date.now();
    const t = setTimeout(() => setLeaving((l) => pruneLeaving(l, Date.now())), Math.max(0, next) + 20);
    return () => clearTimeout(t);
  }, [leaving]);

  // Paused: the rows as they were, TTLs still counting down from their last reading (the leases are real time; a
  // frozen countdown is what a lost connection looks like, and the two must not look alike).
  const base = frozen ?? view;
  const display = useMemo(
    () => (frozen ? mergeLeaving(frozen.rows, frozen.offset, []) : mergeLeaving(view.rows, view.offset, leaving)),
    [frozen, view.rows, view.offset, leaving],
  );
  const extra = display.length - base.rows.length;
  const count = base.total + extra;
  const waiting = frozen ? waitingChanges(frozen, view) : 0;

  // The virtualizer re-renders this component on scroll itself; none of its functions reach a memoized child.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => (narrow ? CARD_HEIGHT : ROW_HEIGHT),
    overscan: narrow ? 6 : 12,
  });
  // Rows and cards differ in height: measure again when the layout switches.
  useEffect(() => {
    virtualizer.measure();
  }, [narrow, virtualizer]);
  const items = virtualizer.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items[items.length - 1]?.index ?? 0;

  // Keep the visible rows inside the subscribed window, with at least a chunk of margin on each side.
  useEffect(() => {
    const inside = first >= windowStart && last < windowStart + WINDOW;
    const margin = first - windowStart >= CHUNK / 2 || windowStart === 0;
    const tail = windowStart + WINDOW - last > CHUNK / 2 || windowStart + WINDOW >= view.total;
    if (inside && margin && tail) return;
    setWindowStart(Math.max(0, Math.floor(first / CHUNK) * CHUNK - CHUNK));
  }, [first, last, windowStart, view.total]);

  const rowAt = (index: number) => {
    const d = display[index - base.offset];
    if (d) return d;
    // Paused: beyond what was frozen, the live rows (scrolling a paused table still shows something real).
    const live = view.rows[index - extra - view.offset];
    return live ? { live, leaving: null } : null;
  };

  const paddingTop = items[0]?.start ?? 0;
  const paddingBottom = items.length > 0 ? virtualizer.getTotalSize() - items[items.length - 1]!.end : 0;
  const hasFilter = query.trim() !== "" || backend !== "all" || hazardsOnly || Object.keys(linkFilters).length > 0;
  const paused = frozen !== null;

  const empty =
    view.ready && view.total === 0 && count === 0 ? (
      <p className="px-3 py-8 text-center text-sm text-slate-400" data-testid="empty">
        {connection === "live"
          ? hasFilter
            ? "No lock matches the filter."
            : "No locks held right now. Locks appear here within a poll of being taken."
          : "Connecting to the dashboard…"}
      </p>
    ) : !view.ready ? (
      <p className="px-3 py-8 text-center text-sm text-slate-400" data-testid="empty">
        Connecting to the dashboard…
      </p>
    ) : null;

  return (
    <section>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-lg font-semibold text-slate-100">
          Locks{" "}
          <span className="text-sm font-normal text-slate-400" data-testid="lock-count">
            {view.total}
          </span>
        </h1>
        <SearchFilter
          value={query}
          onChange={(q) => change((s) => ({ ...s, q }))}
          placeholder="Filter by resource, owner, source, library"
          label="Filter locks"
        />
        <select
          value={backend}
          onChange={(e) => change((s) => ({ ...s, backend: e.target.value }))}
          aria-label="Backend"
          className="rounded border border-slate-700 bg-slate-900 px-2 py-1 text-sm"
        >
          <option value="all">All backends</option>
          {BACKENDS.map((b) => (
            <option key={b} value={b}>
              {BACKEND_LABELS[b]}
            </option>
          ))}
        </select>
        <HazardsOnlyToggle checked={hazardsOnly} onChange={(v) => change((s) => ({ ...s, hazardsOnly: v }))} />
        <button
          type="button"
          aria-pressed={paused}
          data-testid="pause"
          onClick={() => setFrozen(paused ? null : { rows: view.rows, offset: view.offset, total: view.total })}
          className={`rounded border px-2 py-1 text-sm focus:outline-none focus-visible:ring-2 focus-visible:ring-amber-400 ${
            paused
              ? "border-amber-400 bg-amber-400/15 text-amber-200"
              : "border-slate-700 bg-slate-900 text-slate-200 hover:bg-slate-800"
          }`}
        >
          {paused ? "▶ Resume" : "❚❚ Pause"}
        </button>
        {paused ? (
          <span role="status" className="text-sm text-amber-200" data-testid="paused-note">
            paused, {waiting === 0 ? "no changes" : waiting === 1 ? "1 change" : `${waiting} changes`} waiting
          </span>
        ) : null}
        {Object.entries(linkFilters).map(([k, v]) => (
          <button
            key={k}
            type="button"
            onClick={() =>
              change((s) => {
                const links = { ...s.links };
                delete links[k as keyof typeof links];
                return { ...s, links };
              })
            }
            className="rounded bg-slate-800 px-2 py-0.5 font-mono text-xs text-slate-200 hover:bg-slate-700"
            data-testid="link-filter"
            title="remove this filter"
          >
            {k}: {v} ×
          </button>
        ))}
      </div>
      <TruncationBanner />
      {view.error ? (
        <p className="mb-3 text-sm text-rose-300" data-testid="view-error">
          {view.error}
        </p>
      ) : null}
      <div
        ref={scrollRef}
        className="h-[calc(100vh-11rem)] min-h-64 overflow-auto rounded border border-slate-800"
        data-testid="locks-scroll"
        data-paused={paused ? "true" : "false"}
        data-layout={narrow ? "cards" : "table"}
      >
        {narrow ? (
          <div data-testid="locks-cards">
            {paddingTop > 0 ? <div style={{ height: paddingTop }} aria-hidden /> : null}
            {items.map((item) => {
              const row = rowAt(item.index);
              return row ? (
                <LockCard
                  key={row.live.lock.id}
                  live={row.live}
                  index={item.index}
                  leaving={row.leaving !== null}
                  measure={virtualizer.measureElement}
                  ttl={<LiveTtl ttlMs={row.live.lock.ttlMs} receivedAt={row.live.receivedAt} />}
                  heldFor={<HeldFor since={row.live.lock.since} />}
                />
              ) : (
                <div
                  key={`pending-${item.index}`}
                  ref={virtualizer.measureElement}
                  data-index={item.index}
                  data-testid="lock-row-pending"
                  className="h-[104px] px-3 py-2 text-slate-400"
                >
                  …
                </div>
              );
            })}
            {paddingBottom > 0 ? <div style={{ height: paddingBottom }} aria-hidden /> : null}
          </div>
        ) : (
          <table className="w-full table-fixed text-left text-sm" data-testid="locks-table">
            <thead className="sticky top-0 z-[1] bg-slate-900 text-xs uppercase tracking-wide text-slate-400">
              <tr>
                {COLUMNS.map((c) => (
                  <th
                    key={c.label}
                    className={`px-3 py-2 font-medium ${c.className}`}
                    aria-sort={
                      c.sort ? (sort.key === c.sort ? (sort.desc ? "descending" : "ascending") : "none") : undefined
                    }
                  >
                    {c.sort ? (
                      <button
                        type="button"
                        onClick={() => change((s) => ({ ...s, sort: nextSort(s.sort, c.sort!) }))}
                        className="uppercase hover:text-slate-100"
                      >
                        {c.label}
                        {sort.key === c.sort ? (sort.desc ? " ▼" : " ▲") : ""}
                      </button>
                    ) : (
                      c.label
                    )}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-800/70">
              {paddingTop > 0 ? <tr style={{ height: paddingTop }} aria-hidden /> : null}
              {items.map((item) => {
                const row = rowAt(item.index);
                return row ? (
                  <LockRow key={row.live.lock.id} live={row.live} index={item.index} leaving={row.leaving !== null} />
                ) : (
                  <PlaceholderRow key={`pending-${item.index}`} index={item.index} />
                );
              })}
              {paddingBottom > 0 ? <tr style={{ height: paddingBottom }} aria-hidden /> : null}
            </tbody>
          </table>
        )}
        {empty}
      </div>
    </section>
  );
}
