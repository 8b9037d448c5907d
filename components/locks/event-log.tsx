"use client";

import { useEffect, useState } from "react";
import type { EventsResponse } from "@/lib/contract/api";
import type { LockEventType } from "@/lib/contract/lock";
import { EventHistory } from "./event-history";

export const EVENT_LOG_PAGE = 25;

/** The filter's choices: the events an operator looks for, each in plain words. */
const FILTERS: { label: string; types: LockEventType[] | null }[] = [
  { label: "all events", types: null },
  { label: "acquired and released", types: ["acquired", "released"] },
  { label: "taken over or lost", types: ["owner-changed", "lost"] },
  { label: "expired", types: ["expired"] },
  { label: "renewed", types: ["renewed"] },
  { label: "source down or up", types: ["source-down", "source-up"] },
];

async function fetchPage(lockId: string, types: LockEventType[] | null, before: string | null) {
  const q = new URLSearchParams({ lockId, limit: String(EVENT_LOG_PAGE) });
  if (types) q.set("type", types.join(","));
  if (before) q.set("before", before);
  const res = await fetch(`/api/events?${q}`, { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as EventsResponse;
}

/**
 * One lock's stored history, a page at a time (newest first) and filtered by kind: 25 rows instead of a 6,000 px
 * page. The newest page follows live events (refreshKey); an older page stays put while the operator reads it.
 */
export function EventLog({ lockId, refreshKey }: { lockId: string; refreshKey?: string }) {
  const [filter, setFilter] = useState(0);
  // The cursors of the pages before this one: "newer" pops, "older" pushes.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState<EventsResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const before = cursors[cursors.length - 1] ?? null;
  const onNewest = cursors.length === 1;
  const types = FILTERS[filter]!.types;
  const liveKey = onNewest ? refreshKey : undefined;

  useEffect(() => {
    let current = true;
    fetchPage(lockId, types, before)
      .then((p) => {
        if (!current) return;
        setPage(p);
        setError(null);
      })
      .catch((err: unknown) => current && setError(`Could not load the history: ${String(err)}`));
    return () => {
      current = false;
    };
  }, [lockId, types, before, liveKey]);

  return (
    <section data-testid="event-log">
      <div className="mb-2 flex flex-wrap items-center gap-3">
        <h2 className="text-sm font-semibold uppercase tracking-wide text-slate-400">History</h2>
        <label className="text-xs text-slate-400">
          Show{" "}
          <select
            value={filter}
            aria-label="Which events"
            onChange={(e) => {
              setFilter(Number(e.target.value));
              setCursors([null]);
            }}
            className="rounded border border-slate-700 bg-slate-950 px-1 py-0.5 text-slate-200"
          >
            {FILTERS.map((f, i) => (
              <option key={f.label} value={i}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
        <span className="text-xs text-slate-400" data-testid="event-log-page">
          page {cursors.length}
          {onNewest ? " (newest, live)" : ""}
        </span>
        <button
          type="button"
          disabled={onNewest}
          onClick={() => setCursors((c) => c.slice(0, -1))}
          className="rounded border border-slate-700 px-2 py-0.5 text-xs text-slate-300 hover:bg-slate-800 disabled:opacity-40"
        >
          ← Newer
        </button>
        <button
          type="button"
          disabled={!page?.nextCursor}
          onClick={() => page?.nextCursor && setCursors((c) => [...c, page.nextCursor])}
          className="rounded border border-slate-700 px-2 py-0.5 text-xs text-slate-300 hover:bg-slate-800 disabled:opacity-40"
        >
          Older →
        </button>
      </div>
      {error ? <p className="text-sm text-amber-300">{error}</p> : null}
      {page === null ? <p className="text-sm text-slate-400">Loading…</p> : <EventHistory events={page.events} />}
    </section>
  );
}
