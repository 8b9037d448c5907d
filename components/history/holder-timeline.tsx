"use client";

import type { BarEnd, HolderTimeline } from "./holder-timeline-model";

const BAR_CLASS: Record<BarEnd, string> = {
  released: "bg-emerald-600/80",
  expired: "bg-amber-500/80",
  "taken-over": "bg-rose-500/90",
  "handed-over": "bg-violet-500/80",
  lost: "bg-rose-700/80",
  holding: "bg-sky-500",
  other: "bg-slate-500",
};

const LEGEND: Array<[BarEnd, string]> = [
  ["holding", "holding now"],
  ["released", "released"],
  ["expired", "expired"],
  ["taken-over", "taken over"],
  ["handed-over", "handed over"],
];

const LANE = "h-4 mb-1";

/** Where a tick's label sits: centred, but never past the axis's edges (no horizontal overflow on a phone). */
function tickShift(pct: number): string {
  if (pct < 8) return "translateX(0)";
  if (pct > 92) return "translateX(-100%)";
  return "translateX(-50%)";
}

/** One lane per holder, a time axis in the user's format, a marker for now; each bar says in words what it shows. */
export function HolderTimelineChart({ model }: { model: HolderTimeline }) {
  const { lanes, ticks, nowPct } = model;
  return (
    <div data-testid="holder-timeline" data-lanes={lanes.length}>
      <p className="mb-1 text-xs text-slate-400">
        Holders: {model.holdings} {model.holdings === 1 ? "holding" : "holdings"} by {model.holders}{" "}
        {model.holders === 1 ? "holder" : "holders"} in the window
        {model.maxConcurrent > 1 ? `, up to ${model.maxConcurrent} at once` : ""} · times in {model.zoneName}
        {model.fitted ? " · the axis spans the holders drawn" : ""}
      </p>
      {model.earlierHoldings > 0 ? (
        <p className="mb-1 text-xs text-amber-300" data-testid="timeline-earlier">
          +{model.earlierHoldings} earlier {model.earlierHoldings === 1 ? "holding" : "holdings"}
          {model.earlierHolders > 0 ? ` by ${model.earlierHolders} more holders` : ""} not drawn: the latest{" "}
          {lanes.length} holders are
        </p>
      ) : null}
      <div className="flex gap-2 rounded bg-slate-900/60 p-2">
        <ul className="w-24 shrink-0 sm:w-48" aria-hidden="true">
          {lanes.map((l) => (
            <li
              key={l.owner}
              className={`${LANE} truncate font-mono text-[11px] leading-4 text-slate-300`}
              title={l.owner}
            >
              {l.owner}
            </li>
          ))}
        </ul>
        <div className="relative min-w-0 flex-1 overflow-hidden">
          {ticks.map((t) => (
            <div
              key={t.at}
              className="pointer-events-none absolute top-0 bottom-5 border-l border-slate-800"
              style={{ left: `${t.pct}%` }}
            />
          ))}
          <div
            className="pointer-events-none absolute top-0 bottom-5 z-10 border-l-2 border-amber-300/80"
            style={{ left: `${nowPct}%` }}
            data-testid="timeline-now"
            title="now"
          />
          {lanes.length === 0 ? (
            <p className="py-2 text-xs text-slate-400" data-testid="timeline-empty">
              No holdings in this window.
            </p>
          ) : (
            <ul aria-label="Holders over time">
              {lanes.map((l) => (
                <li key={l.owner} className={`relative ${LANE} rounded-sm bg-slate-800/40`} data-testid="holder-lane">
                  {l.bars.map((b, i) => (
                    <div
                      key={`${b.from}-${i}`}
                      role="img"
                      aria-label={b.label}
                      title={b.label}
                      data-testid="holder-bar"
                      data-end={b.end}
                      data-open={b.open}
                      className={`absolute h-full ${BAR_CLASS[b.end]} ${b.clipped ? "rounded-r-sm" : "rounded-sm"} ${
                        b.open ? "rounded-r-none" : ""
                      }`}
                      style={{ left: `${b.left}%`, width: `${b.width}%` }}
                    />
                  ))}
                  {l.bars.some((b) => b.open) ? (
                    // Still in progress: the bar runs on past now, open-ended.
                    <div
                      aria-hidden="true"
                      className="absolute h-full bg-gradient-to-r from-sky-500/60 to-transparent"
                      style={{ left: `${nowPct}%`, width: `${100 - nowPct}%` }}
                    />
                  ) : null}
                </li>
              ))}
            </ul>
          )}
          <div className="relative h-5 border-t border-slate-700" data-testid="timeline-axis">
            {ticks.map((t) => (
              <span
                key={t.at}
                data-testid="timeline-tick"
                className="absolute top-0.5 whitespace-nowrap font-mono text-[10px] text-slate-400"
                style={{ left: `${t.pct}%`, transform: tickShift(t.pct) }}
              >
                {t.label}
              </span>
            ))}
          </div>
        </div>
      </div>
      <ul className="mt-1 flex flex-wrap gap-x-3 gap-y-1 text-[11px] text-slate-400" aria-label="Legend">
        {LEGEND.map(([end, word]) => (
          <li key={end} className="flex items-center gap-1">
            <span className={`inline-block h-2 w-3 rounded-sm ${BAR_CLASS[end]}`} />
            {word}
          </li>
        ))}
        <li className="flex items-center gap-1">
          <span className="inline-block h-3 border-l-2 border-amber-300/80" />
          now
        </li>
      </ul>
    </div>
  );
}
