import Link from "next/link";
import { formatDuration, shorten } from "../locks/format";
import { HazardBadges } from "../locks/hazard-badges";
import { nodeLabel, type GridCell, type GridRow, type NodeHealth } from "./redlock-model";
import { PartialMarker } from "./quorum-badge";
import { EDGE_CLASS, HEALTH_DOT, ROW_CLASS, STATE_CLASS, VOTE_BAR, VOTE_TEXT } from "./redlock-style";

/**
 * Resources × nodes of one Redlock group: which node holds which token for how long, the votes against the quorum
 * and the state. Rows with a hazard are tinted and edged, worst first.
 */
export function QuorumGrid({
  nodeOrder,
  health,
  rows,
  link = true,
}: {
  nodeOrder: readonly string[];
  /** Each member's health now (from the group's status); the header shows it above its column. */
  health: ReadonlyMap<string, NodeHealth>;
  rows: readonly GridRow[];
  /** Link each resource to its detail page (off on the detail page itself). */
  link?: boolean;
}) {
  return (
    <div className="overflow-x-auto rounded border border-slate-800">
      <table className="w-full text-left text-xs" data-testid="redlock-grid">
        <thead className="bg-slate-900 text-[11px] uppercase tracking-wide text-slate-400">
          <tr>
            <th className="border-l-4 border-l-transparent px-2 py-1.5 font-medium">Resource</th>
            <th className="px-2 py-1.5 font-medium">State</th>
            <th className="px-2 py-1.5 font-medium">Votes</th>
            <th className="px-2 py-1.5 text-right font-medium">Validity</th>
            {nodeOrder.map((node) => {
              const h = health.get(node);
              return (
                <th
                  key={node}
                  className="min-w-28 px-2 py-1.5 font-mono font-medium normal-case"
                  title={`${node}${h ? `: ${h}` : ""}`}
                  data-testid="redlock-col"
                  data-node={node}
                >
                  <span className="inline-flex items-center gap-1.5">
                    <span className={`inline-block size-2 rounded-full ${h ? HEALTH_DOT[h] : "bg-slate-600"}`} />
                    {nodeLabel(node)}
                  </span>
                </th>
              );
            })}
            <th className="px-2 py-1.5 font-medium">Hazards</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-800/70">
          {rows.map((r) => (
            <tr
              key={r.id}
              className={ROW_CLASS[r.severity]}
              data-testid="redlock-row"
              data-resource={r.resource}
              data-state={r.state}
              data-votes={r.votes}
              data-partial={r.partial}
            >
              <td className={`max-w-72 truncate px-2 py-1 font-mono ${EDGE_CLASS[r.severity]}`}>
                {link ? (
                  <Link href={`/locks/${r.id}`} className="text-sky-300 hover:underline" title={r.resource}>
                    {r.resource}
                  </Link>
                ) : (
                  <span title={r.resource}>{r.resource}</span>
                )}
                <div className="text-[10px] text-slate-400" title={r.owner ?? "unknown owner"}>
                  owner {shorten(r.owner, 20)}
                </div>
              </td>
              <td className="whitespace-nowrap px-2 py-1">
                <span className="inline-flex items-center gap-1">
                  <span
                    className={`rounded px-1.5 py-0.5 font-medium ring-1 ring-inset ${STATE_CLASS[r.state]}`}
                    data-testid="redlock-state"
                  >
                    {r.state}
                  </span>
                  {r.partial ? <PartialMarker /> : null}
                </span>
              </td>
              <td className="whitespace-nowrap px-2 py-1 font-mono tabular-nums">
                <span
                  className={r.votes >= r.needed ? "text-slate-100" : "font-semibold text-rose-300"}
                  data-testid="redlock-votes"
                >
                  {r.votes}/{r.nodes}
                </span>{" "}
                <span className="text-[10px] text-slate-400">need {r.needed}</span>
                {r.tokens.length > 1 ? (
                  <ul className="mt-0.5 space-y-px text-[10px]">
                    {r.tokens.map((t) => (
                      <li key={t.token} className={t.winner ? VOTE_TEXT.winner : VOTE_TEXT.rival} title={t.token}>
                        {t.short} {t.votes}/{r.nodes}
                      </li>
                    ))}
                  </ul>
                ) : null}
              </td>
              <td
                className={`px-2 py-1 text-right font-mono tabular-nums ${r.validityMs === null ? "text-slate-400" : r.validityMs < 1000 ? "text-rose-300" : "text-slate-200"}`}
                data-testid="redlock-validity"
              >
                {r.validityMs === null ? "—" : formatDuration(r.validityMs)}
              </td>
              {r.cells.map((c) => (
                <NodeCell key={c.node} cell={c} />
              ))}
              <td className="px-2 py-1">
                <HazardBadges hazards={r.hazards} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const CELL_TINT: Record<GridCell["presence"], string> = {
  present: "",
  absent: "",
  unknown: "bg-amber-500/10",
};

function NodeCell({ cell: c }: { cell: GridCell }) {
  const title =
    c.presence === "unknown"
      ? `no answer: ${c.error ?? c.health}`
      : c.presence === "absent"
        ? "key absent on this node"
        : `${c.token ?? ""}${c.vote === "rival" ? " (another token)" : ""}`;
  return (
    <td
      className={`px-2 py-1 ${CELL_TINT[c.presence]} ${c.vote === "rival" ? "bg-fuchsia-500/10" : ""}`}
      title={title}
      data-testid="redlock-cell"
      data-node={c.node}
      data-presence={c.presence}
      data-vote={c.vote}
    >
      {c.presence === "present" ? (
        <>
          <div className={`font-mono text-[11px] ${VOTE_TEXT[c.vote]}`}>{c.tokenShort}</div>
          <div className="flex items-center gap-1">
            <span className="h-1 w-12 overflow-hidden rounded bg-slate-800">
              <span
                className={`block h-full ${VOTE_BAR[c.vote]}`}
                style={{ width: `${Math.round(c.ttlFraction * 100)}%` }}
              />
            </span>
            <span className="font-mono text-[10px] tabular-nums text-slate-400">
              {c.noExpiry ? "no TTL" : c.ttlMs === null ? "" : formatDuration(c.ttlMs)}
            </span>
          </div>
        </>
      ) : c.presence === "unknown" ? (
        <span className="font-medium text-amber-300">? {c.health === "down" ? "down" : "no answer"}</span>
      ) : (
        <span className="text-slate-400">absent</span>
      )}
    </td>
  );
}
