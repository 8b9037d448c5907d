"use client";

import { useEffect, useState } from "react";
import type { ResourceHistory } from "@/lib/contract/alerts";
import { useNow } from "../live/live-locks-provider";
import { waitersNote } from "../locks/detail-labels";
import { formatDuration, shorten } from "../locks/format";
import { AcquisitionsChart, DistributionChart } from "./charts";

const WINDOWS = ["15m", "1h", "6h", "24h", "7d"] as const;

async function fetchHistory(lockId: string, window: string): Promise<ResourceHistory> {
  const res = await fetch(`/api/history/locks/${encodeURIComponent(lockId)}?window=${window}`, { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as ResourceHistory;
}

const END_CLASS: Record<string, string> = {
  released: "bg-emerald-600/70",
  expired: "bg-amber-500/80",
  "owner-changed": "bg-rose-500/80",
  lost: "bg-rose-700/80",
};

/** Contention of one lock: acquisitions over time, hold and wait times, and the timeline of its holders. */
export function LockContention({
  lockId,
  refreshKey,
  lock,
}: {
  lockId: string;
  refreshKey?: string;
  /** The lock as last seen, to say why a waiters chart would be empty (plain Redis clients retry). */
  lock?: { backend: string; rule?: string; waiters: readonly unknown[] } | null;
}) {
  const [window, setWindow] = useState<(typeof WINDOWS)[number]>("1h");
  const [history, setHistory] = useState<ResourceHistory | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    fetchHistory(lockId, window)
      .then((h) => current && setHistory(h))
      .catch((err: unknown) => current && setError(err instanceof Error ? err.message : String(err)));
    return () => {
      current = false;
    };
  }, [lockId, window, refreshKey]);

  const end = useNow(5000);
  const start = end - (history?.windowMs ?? 0);
  return (
    <section data-testid="contention">
      <div className="mb-2 flex items-center gap-3">
        <h2 className="text-sm font-semibold uppercase tracking-wide text-slate-400">Contention</h2>
        {WINDOWS.map((w) => (
          <button
            key={w}
            type="button"
            onClick={() => setWindow(w)}
            className={`text-xs ${w === window ? "text-amber-300" : "text-slate-400 hover:text-slate-200"}`}
          >
            {w}
          </button>
        ))}
      </div>
      {error ? <p className="text-sm text-amber-300">{error}</p> : null}
      {history ? (
        <div className="grid gap-4 lg:grid-cols-3">
          <div className="lg:col-span-3" data-testid="acquisitions-chart">
            <AcquisitionsChart buckets={history.buckets} />
          </div>
          <DistributionChart title="Hold time" d={history.hold} color="#38bdf8" />
          {lock && waitersNote(lock, history.wait.count) ? (
            <p className="text-sm text-slate-400" data-testid="waiters-note">
              {waitersNote(lock, history.wait.count)}
            </p>
          ) : (
            <DistributionChart title="Wait time" d={history.wait} color="#a78bfa" />
          )}
          <div>
            <p className="mb-1 text-xs text-slate-400">Holders ({history.timeline.length})</p>
            <div
              className="relative h-[150px] overflow-y-auto rounded bg-slate-900/60 p-1"
              data-testid="holder-timeline"
            >
              {history.timeline
                .slice(-30)
                .reverse()
                .map((t, i) => {
                  const from = Math.max(start, Date.parse(t.from));
                  const to = t.to ? Date.parse(t.to) : end;
                  const left = ((from - start) / (end - start)) * 100;
                  const width = Math.max(0.5, ((to - from) / (end - start)) * 100);
                  return (
                    <div
                      key={`${t.from}-${i}`}
                      className="relative mb-0.5 h-3.5"
                      title={`${t.owner ?? "?"}: ${formatDuration(to - Date.parse(t.from))}${t.end ? `, ${t.end}` : ", holding"}`}
                    >
                      <div
                        className={`absolute h-full rounded-sm ${t.end ? (END_CLASS[t.end] ?? "bg-slate-500") : "bg-sky-500"}`}
                        style={{ left: `${left}%`, width: `${width}%` }}
                      />
                      <span className="absolute left-1 top-0 text-[10px] leading-[14px] text-slate-100">
                        {shorten(t.owner, 18)}
                      </span>
                    </div>
                  );
                })}
            </div>
          </div>
        </div>
      ) : (
        <p className="text-sm text-slate-400">Loading…</p>
      )}
    </section>
  );
}
