import { leaseView } from "./lease-view";

const TONE = { critical: "bg-rose-500", warning: "bg-amber-400", ok: "bg-emerald-500" } as const;

/**
 * The remaining lease as text and a bar; "no TTL" stands out because such a lock never frees itself, and a lease
 * that reached 0 says so until the agent confirms what happened, instead of looking held.
 */
export function TtlCell({ remaining, total }: { remaining: number | null; total: number | null }) {
  const view = leaseView(remaining, total);
  if (view.kind === "no-ttl") {
    return (
      <span
        className="rounded bg-rose-500/15 px-1.5 py-0.5 text-xs font-medium text-rose-300"
        data-testid="ttl"
        data-ttl="none"
      >
        {view.label}
      </span>
    );
  }
  if (view.kind === "ended") {
    return (
      <span className="text-xs italic text-slate-400" data-testid="ttl" data-ttl="0" data-lease="ended">
        {view.label}
      </span>
    );
  }
  return (
    <div className="flex min-w-28 items-center gap-2">
      <span className="w-14 text-right font-mono tabular-nums" data-testid="ttl" data-ttl={Math.round(remaining!)}>
        {view.label}
      </span>
      <span className="h-1.5 w-16 overflow-hidden rounded bg-slate-800">
        <span className={`block h-full ${TONE[view.tone]}`} style={{ width: `${view.pct}%` }} />
      </span>
    </div>
  );
}
