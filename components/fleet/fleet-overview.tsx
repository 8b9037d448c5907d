"use client";

import Link from "next/link";
import { useEffect, useState } from "react";
import type { FleetResponse } from "@/lib/contract/api";
import { formatDuration } from "../locks/format";

const GROUPINGS = [
  { by: "pattern", label: "Key pattern" },
  { by: "source", label: "Source" },
  { by: "library", label: "Library" },
] as const;

type By = (typeof GROUPINGS)[number]["by"];

/** The overview refreshes on this period: counts over 100,000 locks need no per-change push. */
const REFRESH_MS = 5000;

async function fetchFleet(by: By): Promise<FleetResponse> {
  const res = await fetch(`/api/fleet?by=${by}&limit=500`, { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${((await res.json()) as { error?: string }).error ?? ""}`);
  return (await res.json()) as FleetResponse;
}

/** The drill-down: the locks table filtered to the group. */
function groupHref(by: By, key: string): string {
  return `/?${new URLSearchParams({ [by]: key }).toString()}`;
}

function topHazards(byHazard: Record<string, number>): Array<[string, number]> {
  return Object.entries(byHazard)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 3);
}

/**
 * The fleet at a glance: every live lock in groups (key patterns derived from the names, sources, libraries), the
 * groups with hazards first. A group links to its locks.
 */
export function FleetOverview() {
  const [by, setBy] = useState<By>("pattern");
  const [fleet, setFleet] = useState<FleetResponse | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let current = true;
    const load = () =>
      fetchFleet(by)
        .then((f) => {
          if (!current) return;
          setFleet(f);
          setError(null);
        })
        .catch((err: unknown) => current && setError(err instanceof Error ? err.message : String(err)));
    void load();
    const t = setInterval(() => void load(), REFRESH_MS);
    return () => {
      current = false;
      clearInterval(t);
    };
  }, [by]);

  const shown = fleet?.by === by ? fleet : null;
  return (
    <section className="space-y-4" data-testid="fleet">
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-lg font-semibold text-slate-100">
          Fleet{" "}
          <span className="text-sm font-normal text-slate-400" data-testid="fleet-total">
            {shown ? `${shown.total.toLocaleString("en")} locks` : ""}
          </span>
        </h1>
        <span className="text-sm text-slate-400">group by</span>
        {GROUPINGS.map((g) => (
          <button
            key={g.by}
            type="button"
            onClick={() => setBy(g.by)}
            className={`text-sm ${g.by === by ? "text-amber-300" : "text-slate-400 hover:text-slate-200"}`}
          >
            {g.label}
          </button>
        ))}
        <span className="text-xs text-slate-400">
          patterns come from the key names: digits, UUIDs and hex runs become *
        </span>
      </div>
      {error ? <p className="text-sm text-amber-300">{error}</p> : null}
      <div className="overflow-x-auto rounded border border-slate-800">
        <table className="w-full text-left text-sm">
          <thead className="bg-slate-900 text-xs uppercase tracking-wide text-slate-400">
            <tr>
              <th className="px-3 py-2 font-medium">{GROUPINGS.find((g) => g.by === by)!.label}</th>
              <th className="px-3 py-2 text-right font-medium">Locks</th>
              <th className="px-3 py-2 text-right font-medium">With hazards</th>
              <th className="px-3 py-2 font-medium">Hazards</th>
              <th className="px-3 py-2 text-right font-medium">Longest hold</th>
              <th className="px-3 py-2 font-medium">Backends</th>
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-800/70">
            {(shown?.groups ?? []).map((g) => (
              <tr key={g.key} className="hover:bg-slate-900/60" data-testid="fleet-group" data-key={g.key}>
                <td className="max-w-xl truncate px-3 py-1.5 font-mono">
                  <Link href={groupHref(by, g.key)} className="text-sky-300 hover:underline" title={g.key}>
                    {g.key || "(empty)"}
                  </Link>
                </td>
                <td className="px-3 py-1.5 text-right tabular-nums">{g.count.toLocaleString("en")}</td>
                <td
                  className={`px-3 py-1.5 text-right tabular-nums ${g.withHazards > 0 ? "text-rose-300" : "text-slate-400"}`}
                >
                  {g.withHazards.toLocaleString("en")}
                </td>
                <td className="px-3 py-1.5 text-xs text-slate-300">
                  {topHazards(g.byHazard)
                    .map(([code, n]) => `${code} ${n}`)
                    .join(" · ")}
                </td>
                <td className="px-3 py-1.5 text-right font-mono tabular-nums text-slate-400">
                  {formatDuration(g.longestHoldMs)}
                </td>
                <td className="px-3 py-1.5 text-xs text-slate-400">{Object.keys(g.byBackend).join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {shown && shown.groups.length === 0 ? (
          <p className="px-3 py-8 text-center text-sm text-slate-400">No locks held right now.</p>
        ) : null}
        {shown && shown.moreGroups > 0 ? (
          <p className="px-3 py-2 text-xs text-slate-400">
            {shown.moreGroups.toLocaleString("en")} more groups not shown (fewer hazards and locks than these).
          </p>
        ) : null}
      </div>
    </section>
  );
}
