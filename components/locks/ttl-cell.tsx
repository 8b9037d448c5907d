import { formatDuration } from "./format";

/** The remaining lease as text and a bar; "no TTL" stands out because such a lock never frees itself. */
export function TtlCell({ remaining, total }: { remaining: number | null; total: number | null }) {
  if (remaining === null) {
    return (
      <span
        className="rounded bg-rose-500/15 px-1.5 py-0.5 text-xs font-medium text-rose-300"
        data-testid="ttl"
        data-ttl="none"
      >
        no TTL
      </span>
    );
  }
  const pct = total && total > 0 ? Math.min(100, (remaining / total) * 100) : 0;
  const color = remaining < 1000 ? "bg-rose-500" : pct < 25 ? "bg-amber-400" : "bg-emerald-500";
  return (
    <div className="flex min-w-28 items-center gap-2">
      <span className="w-14 text-right font-mono tabular-nums" data-testid="ttl" data-ttl={Math.round(remaining)}>
        {formatDuration(remaining)}
      </span>
      <span className="h-1.5 w-16 overflow-hidden rounded bg-slate-800">
        <span className={`block h-full ${color}`} style={{ width: `${pct}%` }} />
      </span>
    </div>
  );
}
