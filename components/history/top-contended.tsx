"use client";

import Link from "next/link";
import { useEffect, useState } from "react";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { TopContended } from "@/lib/contract/alerts";
import { formatDuration, shorten } from "../locks/format";

const WINDOWS = ["1h", "6h", "24h", "7d"] as const;

async function fetchTop(window: string): Promise<TopContended> {
  const res = await fetch(`/api/history/top?window=${window}`, { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as TopContended;
}

/** The most contended resources across all backends in a window. */
export function TopContendedView() {
  const [window, setWindow] = useState<(typeof WINDOWS)[number]>("24h");
  const [top, setTop] = useState<TopContended | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    fetchTop(window)
      .then((t) => current && setTop(t))
      .catch((err: unknown) => current && setError(err instanceof Error ? err.message : String(err)));
    return () => {
      current = false;
    };
  }, [window]);
  const data = (top?.resources ?? []).slice(0, 12).map((r) => ({ name: shorten(r.resource, 28), ...r }));
  return (
    <section className="space-y-4">
      <div className="flex items-center gap-3">
        <h1 className="text-lg font-semibold text-slate-100">Most contended locks</h1>
        {WINDOWS.map((w) => (
          <button
            key={w}
            type="button"
            onClick={() => setWindow(w)}
            className={`text-sm ${w === window ? "text-amber-300" : "text-slate-500 hover:text-slate-200"}`}
          >
            {w}
          </button>
        ))}
      </div>
      {error ? <p className="text-sm text-amber-300">{error}</p> : null}
      <div className="rounded border border-slate-800 p-2" data-testid="top-chart">
        <ResponsiveContainer width="100%" height={280}>
          <BarChart data={data} layout="vertical" margin={{ left: 40, right: 16 }}>
            <CartesianGrid stroke="#1e293b" horizontal={false} />
            <XAxis type="number" allowDecimals={false} tick={{ fill: "#64748b", fontSize: 11 }} />
            <YAxis type="category" dataKey="name" width={200} tick={{ fill: "#94a3b8", fontSize: 11 }} />
            <Tooltip contentStyle={{ background: "#0f172a", border: "1px solid #334155", fontSize: 12 }} />
            <Legend wrapperStyle={{ fontSize: 11 }} />
            <Bar dataKey="acquisitions" stackId="x" fill="#34d399" name="acquired" isAnimationActive={false} />
            <Bar dataKey="ownerChanges" stackId="x" fill="#f43f5e" name="taken over" isAnimationActive={false} />
            <Bar dataKey="expiries" stackId="x" fill="#fbbf24" name="expired" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      <table className="w-full text-left text-sm" data-testid="top-table">
        <thead className="text-xs uppercase tracking-wide text-slate-500">
          <tr>
            {["Resource", "Backend", "Acquired", "Taken over", "Expired", "Hold avg", "Hold max"].map((h) => (
              <th key={h} className="py-1 pr-4 font-medium">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-800/70">
          {(top?.resources ?? []).map((r) => (
            <tr key={r.lockId} data-testid="top-row">
              <td className="max-w-md truncate py-1 pr-4 font-mono">
                <Link href={`/locks/${r.lockId}`} className="text-sky-300 hover:underline">
                  {r.resource}
                </Link>
              </td>
              <td className="py-1 pr-4 text-slate-400">{r.backend}</td>
              <td className="py-1 pr-4 tabular-nums">{r.acquisitions}</td>
              <td className="py-1 pr-4 tabular-nums">{r.ownerChanges}</td>
              <td className="py-1 pr-4 tabular-nums">{r.expiries}</td>
              <td className="py-1 pr-4 tabular-nums">{r.holdAvgMs === null ? "—" : formatDuration(r.holdAvgMs)}</td>
              <td className="py-1 pr-4 tabular-nums">{r.holdMaxMs === null ? "—" : formatDuration(r.holdMaxMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
