import type { GroupView, SkewView } from "./redlock-model";
import { nodeLabel } from "./redlock-model";
import { HEALTH_CLASS } from "./redlock-style";

function ms(v: number | null, signed = false): string {
  if (v === null) return "—";
  const text = Math.abs(v) < 10 ? v.toFixed(1) : Math.round(v).toString();
  return `${signed && v > 0 ? "+" : ""}${text} ms`;
}

/** Each member of a group: up / slow / down with the reason, TIME round trip and clock offset from the agent. */
export function NodeHealthTable({ group }: { group: GroupView }) {
  if (group.nodes.length === 0) {
    return <p className="text-xs text-slate-500">No health reported for this group yet.</p>;
  }
  return (
    <table className="w-full text-left text-xs" data-testid="redlock-health">
      <thead className="text-[11px] uppercase tracking-wide text-slate-500">
        <tr>
          <th className="py-1 pr-3 font-medium">Node</th>
          <th className="py-1 pr-3 font-medium">State</th>
          <th className="py-1 pr-3 text-right font-medium">Latency</th>
          <th className="py-1 pr-3 text-right font-medium" title="Node clock minus the agent's, from TIME">
            Clock offset
          </th>
          <th className="py-1 font-medium">Reason</th>
        </tr>
      </thead>
      <tbody className="divide-y divide-slate-800/70">
        {group.nodes.map((n) => (
          <tr key={n.id} data-testid="redlock-node" data-node={n.id} data-state={n.health}>
            <td className="py-1 pr-3 font-mono text-slate-200" title={n.id}>
              {n.label}
            </td>
            <td className="py-1 pr-3">
              <span className={`rounded px-1.5 py-0.5 font-medium ring-1 ring-inset ${HEALTH_CLASS[n.health]}`}>
                {n.health}
              </span>
            </td>
            <td className="py-1 pr-3 text-right font-mono tabular-nums text-slate-300">{ms(n.latencyMs)}</td>
            <td className="py-1 pr-3 text-right font-mono tabular-nums text-slate-300">{ms(n.clockOffsetMs, true)}</td>
            <td className={`py-1 ${n.health === "up" ? "text-slate-500" : "text-amber-200"}`}>{n.reason ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
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
      <p className="text-xs text-slate-500" data-testid="redlock-skew" data-level="unknown">
        Clock skew: fewer than two clocks known.
      </p>
    );
  }
  const pct = skew.allowanceMs ? Math.round((skew.lowerBoundMs / skew.allowanceMs) * 100) : null;
  return (
    <p className={`text-xs ${SKEW_CLASS[skew.level]}`} data-testid="redlock-skew" data-level={skew.level}>
      {skew.level !== "ok" ? <span className="mr-1">⚠</span> : null}
      Clock skew <span className="font-mono tabular-nums">{ms(skew.skewMs)}</span>
      <span className="text-slate-500">
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
        <span className="text-slate-500"> · no held lock to compare with a drift allowance</span>
      )}
    </p>
  );
}
