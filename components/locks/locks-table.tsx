"use client";

import Link from "next/link";
import { useMemo, useState } from "react";
import { BACKEND_LABELS, BACKENDS, type Backend } from "@/lib/contract/lock";
import { useLiveLocks, useNow, type LiveLock } from "../live/live-locks-provider";
import { queueLength } from "../zookeeper/chain-model";
import { QuorumBadge } from "../redlock/quorum-badge";
import { formatDuration, remainingTtl, shorten } from "./format";
import { HazardBadges } from "./hazard-badges";
import { TtlCell } from "./ttl-cell";
import { HazardsOnlyToggle, SearchFilter } from "../ui/list-filters";

type SortKey = "resource" | "backend" | "source" | "owner" | "library" | "ttl" | "held" | "waiters";

const COLUMNS: Array<{ key: SortKey; label: string; className?: string }> = [
  { key: "resource", label: "Resource" },
  { key: "backend", label: "Backend" },
  { key: "source", label: "Source" },
  { key: "owner", label: "Owner" },
  { key: "library", label: "Library" },
  { key: "ttl", label: "TTL" },
  { key: "held", label: "Held for" },
  { key: "waiters", label: "Waiters", className: "text-right" },
];

function sortValue(l: LiveLock, key: SortKey, now: number): string | number {
  const lock = l.lock;
  switch (key) {
    case "ttl":
      // Locks without a TTL sort as the longest: they are the ones that never free themselves.
      return remainingTtl(lock.ttlMs, l.receivedAt, now) ?? Number.MAX_SAFE_INTEGER;
    case "held":
      return now - Date.parse(lock.since);
    case "waiters":
      return queueLength(lock);
    case "owner":
      return lock.owner ?? "";
    default:
      return lock[key];
  }
}

export function LocksTable() {
  const { locks, connection } = useLiveLocks();
  const now = useNow();
  const [query, setQuery] = useState("");
  const [backend, setBackend] = useState<Backend | "all">("all");
  const [hazardsOnly, setHazardsOnly] = useState(false);
  const [sort, setSort] = useState<{ key: SortKey; dir: 1 | -1 }>({ key: "resource", dir: 1 });

  const filtered = useMemo(() => {
    const q = query.trim().toLowerCase();
    return [...locks.values()].filter(({ lock }) => {
      if (backend !== "all" && lock.backend !== backend) return false;
      if (hazardsOnly && lock.hazards.length === 0) return false;
      if (!q) return true;
      return [lock.resource, lock.owner ?? "", lock.source, lock.library].some((f) => f.toLowerCase().includes(q));
    });
  }, [locks, query, backend, hazardsOnly]);

  const rows = [...filtered].sort((a, b) => {
    const va = sortValue(a, sort.key, now);
    const vb = sortValue(b, sort.key, now);
    return (va < vb ? -1 : va > vb ? 1 : 0) * sort.dir;
  });

  const toggleSort = (key: SortKey) => setSort((s) => ({ key, dir: s.key === key ? (s.dir === 1 ? -1 : 1) : 1 }));

  return (
    <section>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-lg font-semibold text-slate-100">
          Locks{" "}
          <span className="text-sm font-normal text-slate-400" data-testid="lock-count">
            {filtered.length}
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
          onChange={(e) => setBackend(e.target.value as Backend | "all")}
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
      </div>
      <div className="overflow-x-auto rounded border border-slate-800">
        <table className="w-full text-left text-sm" data-testid="locks-table">
          <thead className="bg-slate-900 text-xs uppercase tracking-wide text-slate-400">
            <tr>
              {COLUMNS.map((c) => (
                <th key={c.key} className={`px-3 py-2 font-medium ${c.className ?? ""}`}>
                  <button type="button" onClick={() => toggleSort(c.key)} className="uppercase hover:text-slate-100">
                    {c.label}
                    {sort.key === c.key ? (sort.dir === 1 ? " ▲" : " ▼") : ""}
                  </button>
                </th>
              ))}
              <th className="px-3 py-2 font-medium">Hazards</th>
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-800/70">
            {rows.map(({ lock, receivedAt }) => {
              const remaining = remainingTtl(lock.ttlMs, receivedAt, now);
              return (
                <tr key={lock.id} className="hover:bg-slate-900/60" data-testid="lock-row" data-lock-id={lock.id}>
                  <td className="max-w-md truncate px-3 py-1.5 font-mono">
                    <Link href={`/locks/${lock.id}`} className="text-sky-300 hover:underline" title={lock.resource}>
                      {lock.resource}
                    </Link>
                  </td>
                  <td className="px-3 py-1.5 text-slate-400">
                    {lock.backend}
                    {lock.quorum ? (
                      <>
                        {" "}
                        <QuorumBadge quorum={lock.quorum} />
                      </>
                    ) : null}
                  </td>
                  <td className="max-w-48 truncate px-3 py-1.5 font-mono text-xs text-slate-400" title={lock.source}>
                    {lock.source}
                  </td>
                  <td className="px-3 py-1.5 font-mono text-xs" title={lock.owner ?? "unknown"}>
                    {shorten(lock.owner, 28)}
                  </td>
                  <td className="px-3 py-1.5 text-slate-300" title={`rule: ${lock.rule}`}>
                    {lock.library}
                  </td>
                  <td className="px-3 py-1.5">
                    <TtlCell remaining={remaining} total={lock.ttlMs === null ? null : Math.max(lock.ttlMs, 1)} />
                  </td>
                  <td className="px-3 py-1.5 font-mono tabular-nums text-slate-400">
                    {formatDuration(Math.max(0, now - Date.parse(lock.since)))}
                  </td>
                  <td className="px-3 py-1.5 text-right tabular-nums" data-testid="waiters-count">
                    {queueLength(lock) || ""}
                  </td>
                  <td className="px-3 py-1.5">
                    <HazardBadges hazards={lock.hazards} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {rows.length === 0 ? (
          <p className="px-3 py-8 text-center text-sm text-slate-500" data-testid="empty">
            {connection === "live"
              ? locks.size === 0
                ? "No locks held right now. Locks appear here within a poll of being taken."
                : "No lock matches the filter."
              : "Connecting to the dashboard…"}
          </p>
        ) : null}
      </div>
    </section>
  );
}
