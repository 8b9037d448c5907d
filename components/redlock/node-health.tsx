import type { GroupView, NodeRow, SkewView } from "./redlock-model";
import { nodeLabel } from "./redlock-model";
import { HEALTH_CLASS } from "./redlock-style";

function ms(v: number | null, signed = false): string {
  if (v === null) return "—";
  const text = Math.abs(v) < 10 ? v.toFixed(1) : Math.round(v).toString();
  return `${signed && v > 0 ? "+" : ""}${text} ms`;
}

const CARD_CLASS: Record<NodeRow["health"], string> = {
  up: "border-slate-800 bg-slate-900/40",
  slow: "border-amber-500/50 bg-amber-950/30",
  down: "border-rose-500/60 bg-rose-950/40",
};

/**
 * Each member of a group as a small card, in the grid's column order: up / slow / down with the reason, the TIME
 * round trip and the clock offset from the agent's clock.
 */
export function NodeHealthStrip({ group }: { group: GroupView }) {
  if (group.nodes.length === 0) {
    return <p className="text-xs text-slate-400">No health reported for this group yet.</p>;
  }
  return (
    <ul className="grid gap-2 [grid-template-columns:repeat(auto-fill,minmax(14rem,1fr))]" data-testid="redlock-health">
      {group.nodes.map((n) => (
        <li
          key={n.id}
          className={`rounded border px-2.5 py-1.5 ${CARD_CLASS[n.health]}`}
          data-testid="redlock-node"
          data-node={n.id}
          data-state={n.health}
        >
          <div className="flex items-center justify-between gap-2">
            <span className="truncate font-mono text-xs text-slate-100" title={n.id}>
              {n.label}
            </span>
            <span
              className={`rounded px-1.5 py-px text-[11px] font-medium ring-1 ring-inset ${HEALTH_CLASS[n.health]}`}
            >
              {n.health}
            </span>
          </div>
          <div className="mt-0.5 flex gap-3 text-[11px] text-slate-400">
            <span>
              latency <span className="font-mono tabular-nums text-slate-300">{ms(n.latencyMs)}</span>
            </span>
            <span title="Node clock minus the agent's, from TIME">
              clock <span className="font-mono tabular-nums text-slate-300">{ms(n.clockOffsetMs, true)}</span>
            </span>
          </div>
          {n.reason ? <p className="mt-0.5 text-[11px] leading-snug text-amber-200">{n.reason}</p> : null}
        </li>
      ))}
    </ul>
  );
}

const SKEW_CLASS: Record<SkewView["level"], string> = {
  ok: "text-slate-300",
  warning: "text-amber-300",
  critical: "font-semibold text-rose-300",
};

/** Group clock skew against the tightest drift allowance of the group's held locks. */
export function SkewLine({ skew }: { skew: SkewView | null }) {
  if (!skew) {
    return (
      <p className="text-xs text-slate-400" data-testid="redlock-skew" data-level="unknown">
        Clock skew: fewer than two clocks known.
      </p>
    );
  }
  const pct = skew.allowanceMs ? Math.round((skew.lowerBoundMs / skew.allowanceMs) * 100) : null;
  return (
    <p className={`text-xs ${SKEW_CLASS[skew.level]}`} data-testid="redlock-skew" data-level={skew.level}>
      {skew.level !== "ok" ? <span className="mr-1">⚠</span> : null}
      Clock skew <span className="font-mono tabular-nums">{ms(skew.skewMs)}</span>
      <span className="text-slate-400">
        {" "}
        (at least <span className="font-mono tabular-nums">{ms(skew.lowerBoundMs)}</span>;{" "}
        <span className="font-mono">{nodeLabel(skew.ahead)}</span> ahead of{" "}
        <span className="font-mono">{nodeLabel(skew.behind)}</span>)
      </span>
      {skew.allowanceMs !== null ? (
        <>
          {" "}
          · drift allowance <span className="font-mono tabular-nums">{ms(skew.allowanceMs)}</span> (tightest held lock)
          {pct !== null ? <span className="font-mono tabular-nums"> · {pct}%</span> : null}
          {skew.level === "critical"
            ? ": beyond the allowance, a clock correction can end a lock early on one node"
            : skew.level === "warning"
              ? ": over half the allowance"
              : ""}
        </>
      ) : (
        <span className="text-slate-400"> · no held lock to compare with a drift allowance</span>
      )}
    </p>
  );
}
