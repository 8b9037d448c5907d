"use client";

import Link from "next/link";
import { usePathname, useSearchParams } from "next/navigation";
import { useEffect, useState } from "react";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { RANK_BY, type RankBy, type TopContended } from "@/lib/contract/alerts";
import { formatDuration } from "../locks/format";
import { formatTime } from "../time/format-time";
import { useZone } from "../time/time";
import { emptyRankingText, RANK_CHOICES, rankChoice } from "./rank-words";

const WINDOWS = ["1h", "6h", "24h", "7d"] as const;
type HistoryWindow = (typeof WINDOWS)[number];

/** The window and ranking from the URL (a shared link, a reload); anything else is the default. */
export function parseHistoryParams(params: { get(name: string): string | null }): {
  window: HistoryWindow;
  by: RankBy;
} {
  const w = params.get("window");
  const b = params.get("by");
  return {
    window: (WINDOWS as readonly string[]).includes(w ?? "") ? (w as HistoryWindow) : "24h",
    by: (RANK_BY as readonly string[]).includes(b ?? "") ? (b as RankBy) : "contention",
  };
}
const AXIS = { fill: "#94a3b8", fontSize: 11 };
const TOOLTIP = { contentStyle: { background: "#0f172a", border: "1px solid #334155", fontSize: 12 } };

async function fetchTop(window: string, by: RankBy): Promise<TopContended> {
  const res = await fetch(`/api/history/top?window=${window}&by=${by}`, { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as TopContended;
}

/** The fleet's contention per hour, then the locks that hurt most in the window, ranked as the operator chooses. */
export function TopContendedView() {
  const params = useSearchParams();
  const pathname = usePathname();
  const [window, setWindow] = useState<HistoryWindow>(() => parseHistoryParams(params).window);
  const [by, setBy] = useState<RankBy>(() => parseHistoryParams(params).by);
  // The view in the URL, defaults left out: an incident link opens the same window and ranking.
  useEffect(() => {
    const p = new URLSearchParams();
    if (window !== "24h") p.set("window", window);
    if (by !== "contention") p.set("by", by);
    const qs = p.toString();
    if (qs === new URLSearchParams(globalThis.location?.search ?? "").toString()) return;
    // The native history call, which Next.js folds into useSearchParams: router.replace would fetch the page from
    // the server again (the pages are dynamic). `window` here is the history window chosen.
    globalThis.history.replaceState(globalThis.history.state, "", qs ? `${pathname}?${qs}` : pathname);
  }, [window, by, pathname]);
  const [top, setTop] = useState<TopContended | null>(null);
  const [zone] = useZone();
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    fetchTop(window, by)
      .then((t) => {
        if (!current) return;
        setTop(t);
        setError(null);
      })
      .catch((err: unknown) => current && setError(err instanceof Error ? err.message : String(err)));
    return () => {
      current = false;
    };
  }, [window, by]);
  const hours = (top?.hours ?? []).map((h) => ({ ...h, label: formatTime(h.t, zone).slice(5, 16) }));
  const choice = rankChoice(by);
  const resources = top?.resources ?? [];
  return (
    <section className="space-y-4">
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-lg font-semibold text-slate-100">History</h1>
        <span className="text-sm text-slate-400">window</span>
        {WINDOWS.map((w) => (
          <button
            key={w}
            type="button"
            aria-pressed={w === window}
            onClick={() => setWindow(w)}
            className={`text-sm ${w === window ? "text-amber-300" : "text-slate-400 hover:text-slate-200"}`}
          >
            {w}
          </button>
        ))}
      </div>
      {error ? <p className="text-sm text-amber-300">{error}</p> : null}
      <div className="rounded border border-slate-800 p-2" data-testid="fleet-chart">
        <h2 className="mb-1 text-sm font-semibold uppercase tracking-wide text-slate-400">
          Contention over time, whole fleet (per hour)
        </h2>
        <ResponsiveContainer width="100%" height={200}>
          <BarChart data={hours} margin={{ top: 4, right: 8, bottom: 0, left: -20 }}>
            <CartesianGrid stroke="#1e293b" vertical={false} />
            <XAxis dataKey="label" tick={AXIS} minTickGap={24} />
            <YAxis allowDecimals={false} tick={AXIS} />
            <Tooltip {...TOOLTIP} />
            <Legend wrapperStyle={{ fontSize: 11 }} />
            <Bar dataKey="acquisitions" stackId="a" fill="#34d399" name="acquired" isAnimationActive={false} />
            <Bar dataKey="ownerChanges" stackId="b" fill="#f43f5e" name="taken over" isAnimationActive={false} />
            <Bar dataKey="expiries" stackId="b" fill="#fbbf24" name="expired" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      <div className="flex flex-wrap items-center gap-3">
        <h2 className="text-sm font-semibold uppercase tracking-wide text-slate-400">Locks that hurt most</h2>
        <label className="text-sm text-slate-400">
          rank by{" "}
          <select
            aria-label="Rank by"
            value={by}
            onChange={(e) => setBy(e.target.value as RankBy)}
            className="rounded border border-slate-700 bg-slate-950 px-1 py-0.5 text-slate-200"
          >
            {RANK_CHOICES.map((c) => (
              <option key={c.by} value={c.by}>
                {c.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="overflow-x-auto">
        <table className="w-full text-left text-sm" data-testid="top-table" data-rank={top?.by ?? by}>
          <thead className="text-xs uppercase tracking-wide text-slate-400">
            <tr>
              {["Resource", "Backend", choice.column, "Acquired", "Taken over", "Expired", "Hold avg", "Hold max"].map(
                (h, i) => (
                  <th key={`${h}-${i}`} className="py-1 pr-4 font-medium">
                    {h}
                  </th>
                ),
              )}
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-800/70">
            {resources.map((r) => (
              <tr key={r.lockId} data-testid="top-row">
                <td className="max-w-md truncate py-1 pr-4 font-mono">
                  <Link href={`/locks/${r.lockId}`} className="text-sky-300 hover:underline">
                    {r.resource}
                  </Link>
                </td>
                <td className="py-1 pr-4 text-slate-400">{r.backend}</td>
                <td className="py-1 pr-4 font-semibold tabular-nums text-slate-100" data-testid="rank-value">
                  {choice.value(r)}
                </td>
                <td className="py-1 pr-4 tabular-nums">{r.acquisitions}</td>
                <td className="py-1 pr-4 tabular-nums">{r.ownerChanges}</td>
                <td className="py-1 pr-4 tabular-nums">{r.expiries}</td>
                <td className="py-1 pr-4 tabular-nums">{r.holdAvgMs === null ? "—" : formatDuration(r.holdAvgMs)}</td>
                <td className="py-1 pr-4 tabular-nums">{r.holdMaxMs === null ? "—" : formatDuration(r.holdMaxMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {top && resources.length === 0 ? (
          <p className="px-3 py-6 text-center text-sm text-slate-400" data-testid="top-empty">
            {emptyRankingText(by)}
          </p>
        ) : null}
      </div>
    </section>
  );
}
