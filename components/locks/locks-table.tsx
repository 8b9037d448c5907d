"use client";

import { useVirtualizer } from "@tanstack/react-virtual";
import Link from "next/link";
import { useSearchParams } from "next/navigation";
import { memo, useEffect, useMemo, useRef, useState } from "react";
import { BACKEND_LABELS, BACKENDS } from "@/lib/contract/lock";
import type { LockViewQuery } from "@/lib/contract/socket";
import { queueLength } from "@/lib/contract/lock-queue";
import { useLiveLocks, useLockView, useNow, type LiveLock } from "../live/live-locks-provider";
import { QuorumBadge } from "../redlock/quorum-badge";
import { formatDuration, remainingTtl, shorten } from "./format";
import { HazardBadges } from "./hazard-badges";
import { TtlCell } from "./ttl-cell";
import { HazardsOnlyToggle, SearchFilter } from "../ui/list-filters";

/** The sorts the server's index answers (GET /api/locks `sort`). */
type SortKey = "resource" | "ttl" | "held" | "waiters" | "hazards";

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
/**
 * The table subscribes to a window of rows around what is visible, in steps of CHUNK, so scrolling a screen or two
 * never re-subscribes and a jump (a dragged scrollbar) costs one small window, never the whole list.
 */
const CHUNK = 100;
const WINDOW = 3 * CHUNK;

/** Drill-down filters a link may carry (the fleet overview's groups): shown as removable chips. */
const LINK_FILTERS = ["pattern", "source", "library", "hazard"] as const;

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

const LockRow = memo(function LockRow({ live, index }: { live: LiveLock; index: number }) {
  const { lock, receivedAt } = live;
  return (
    <tr className="h-[33px] hover:bg-slate-900/60" data-testid="lock-row" data-lock-id={lock.id} data-index={index}>
      <td className="truncate px-3 py-1.5 font-mono">
        <Link href={`/locks/${lock.id}`} className="text-sky-300 hover:underline" title={lock.resource}>
          {lock.resource}
        </Link>
      </td>
      <td className="truncate px-3 py-1.5 text-slate-400">
        {lock.backend}
        {lock.quorum ? (
          <>
            {" "}
            <QuorumBadge quorum={lock.quorum} />
          </>
        ) : null}
      </td>
      <td className="truncate px-3 py-1.5 font-mono text-xs text-slate-400" title={lock.source}>
        {lock.source}
      </td>
      <td className="truncate px-3 py-1.5 font-mono text-xs" title={lock.owner ?? "unknown"}>
        {shorten(lock.owner, 28)}
      </td>
      <td className="truncate px-3 py-1.5 text-slate-300" title={`rule: ${lock.rule}`}>
        {lock.library}
      </td>
      <td className="px-3 py-1.5">
        <LiveTtl ttlMs={lock.ttlMs} receivedAt={receivedAt} />
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
      <td colSpan={COLUMNS.length} className="px-3 py-1.5 text-slate-600">
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

export function LocksTable() {
  const { connection } = useLiveLocks();
  const params = useSearchParams();
  const linkFilters = useMemo(() => {
    const f: Partial<Record<(typeof LINK_FILTERS)[number], string>> = {};
    for (const k of LINK_FILTERS) {
      const v = params.get(k);
      if (v) f[k] = v;
    }
    return f;
  }, [params]);
  const [query, setQuery] = useState(() => params.get("q") ?? "");
  const [backend, setBackend] = useState(() => params.get("backend") ?? "all");
  const [hazardsOnly, setHazardsOnly] = useState(false);
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: "resource", desc: false });
  const [windowStart, setWindowStart] = useState(0);
  const scrollRef = useRef<HTMLDivElement>(null);

  const filter = useMemo(() => {
    const f: LockViewQuery = { ...linkFilters, sort: `${sort.desc ? "-" : ""}${sort.key}` };
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

  // The virtualizer re-renders this component on scroll itself; none of its functions reach a memoized child.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: view.total,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
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

  const toggleSort = (key: SortKey) =>
    setSort((s) => ({ key, desc: s.key === key ? !s.desc : key === "hazards" || key === "held" || key === "waiters" }));

  const paddingTop = items[0]?.start ?? 0;
  const paddingBottom = items.length > 0 ? virtualizer.getTotalSize() - items[items.length - 1]!.end : 0;
  const hasFilter = query.trim() !== "" || backend !== "all" || hazardsOnly || Object.keys(linkFilters).length > 0;

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
          onChange={setQuery}
          placeholder="Filter by resource, owner, source, library"
          label="Filter locks"
        />
        <select
          value={backend}
          onChange={(e) => setBackend(e.target.value)}
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
        <HazardsOnlyToggle checked={hazardsOnly} onChange={setHazardsOnly} />
        {Object.entries(linkFilters).map(([k, v]) => (
          <Link
            key={k}
            href="/"
            className="rounded bg-slate-800 px-2 py-0.5 font-mono text-xs text-slate-200 hover:bg-slate-700"
            data-testid="link-filter"
            title="remove this filter"
          >
            {k}: {v} ×
          </Link>
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
      >
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
                      onClick={() => toggleSort(c.sort!)}
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
              const live = view.rows[item.index - view.offset];
              return live ? (
                <LockRow key={live.lock.id} live={live} index={item.index} />
              ) : (
                <PlaceholderRow key={`pending-${item.index}`} index={item.index} />
              );
            })}
            {paddingBottom > 0 ? <tr style={{ height: paddingBottom }} aria-hidden /> : null}
          </tbody>
        </table>
        {view.ready && view.total === 0 ? (
          <p className="px-3 py-8 text-center text-sm text-slate-500" data-testid="empty">
            {connection === "live"
              ? hasFilter
                ? "No lock matches the filter."
                : "No locks held right now. Locks appear here within a poll of being taken."
              : "Connecting to the dashboard…"}
          </p>
        ) : null}
        {!view.ready ? (
          <p className="px-3 py-8 text-center text-sm text-slate-500" data-testid="empty">
            Connecting to the dashboard…
          </p>
        ) : null}
      </div>
    </section>
  );
}
