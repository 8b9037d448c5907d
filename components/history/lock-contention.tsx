"use client";

import { useEffect, useState, useSyncExternalStore } from "react";
import type { ResourceHistory } from "@/lib/contract/alerts";
import { useNow } from "../live/live-locks-provider";
import { waitersNote } from "../locks/detail-labels";
import { useZone } from "../time/time";
import { AcquisitionsChart, DistributionChart } from "./charts";
import { HolderTimelineChart } from "./holder-timeline";
import { holderTimeline } from "./holder-timeline-model";

const WINDOWS = ["15m", "1h", "6h", "24h", "7d"] as const;

/** A phone-sized screen: fewer axis ticks, so their labels never overlap. */
function useNarrow(): boolean {
  return useSyncExternalStore(
    (l) => {
      const q = window.matchMedia("(max-width: 639px)");
      q.addEventListener("change", l);
      return () => q.removeEventListener("change", l);
    },
    () => window.matchMedia("(max-width: 639px)").matches,
    () => false,
  );
}

async function fetchHistory(lockId: string, window: string): Promise<ResourceHistory> {
  const res = await fetch(`/api/history/locks/${encodeURIComponent(lockId)}?window=${window}`, { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as ResourceHistory;
}

/** Contention of one lock: acquisitions over time, hold and wait times, and the timeline of its holders. */
export function LockContention({
  lockId,
  refreshKey,
  lock,
  liveHolders,
}: {
  lockId: string;
  refreshKey?: string;
  /** The lock as last seen, to say why a waiters chart would be empty (plain Redis clients retry). */
  lock?: { backend: string; rule?: string; waiters: readonly unknown[] } | null;
  /** Who holds it now, so a holding begun before the window is drawn too. */
  liveHolders?: ReadonlyArray<{ owner: string | null; since?: string | null }>;
}) {
  const [zone] = useZone();
  const narrow = useNarrow();
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
        <div className="grid gap-4 lg:grid-cols-2">
          <div className="lg:col-span-2" data-testid="acquisitions-chart">
            <AcquisitionsChart buckets={history.buckets} />
          </div>
          <div className="lg:col-span-2">
            <HolderTimelineChart
              model={holderTimeline(history.timeline, {
                start,
                now: end,
                zone,
                total: history.timelineTotal,
                live: liveHolders,
                maxTicks: narrow ? 4 : 7,
              })}
            />
          </div>
          <DistributionChart title="Hold time" d={history.hold} color="#38bdf8" />
          {lock && waitersNote(lock, history.wait.count) ? (
            <p className="text-sm text-slate-400" data-testid="waiters-note">
              {waitersNote(lock, history.wait.count)}
            </p>
          ) : (
            <DistributionChart title="Wait time" d={history.wait} color="#a78bfa" />
          )}
        </div>
      ) : (
        <p className="text-sm text-slate-400">Loading…</p>
      )}
    </section>
  );
}
