import type { LockEvent, LockEventType } from "@/lib/contract/lock";
import { Time } from "../time/time";
import { formatDuration, shorten } from "./format";

const TYPE_CLASS: Record<LockEventType, string> = {
  acquired: "text-emerald-300",
  released: "text-slate-300",
  expired: "text-amber-300",
  renewed: "text-sky-300",
  "owner-changed": "text-rose-300",
  lost: "text-rose-400",
  "source-down": "text-rose-400",
  "source-up": "text-emerald-400",
};

function describe(e: LockEvent): string {
  const d = e.detail ?? {};
  const parts: string[] = [];
  if (e.type === "owner-changed") {
    parts.push(`${shorten(e.previousOwner ?? null, 20)} → ${shorten(e.owner, 20)}`);
    if (d.afterExpiry) parts.push("the previous lease had run out");
  }
  if (typeof d.heldMs === "number") parts.push(`held ${formatDuration(d.heldMs)}`);
  if (typeof d.reason === "string") parts.push(d.reason);
  if (typeof d.error === "string") parts.push(d.error);
  return parts.join(" · ");
}

export function EventHistory({ events }: { events: LockEvent[] }) {
  if (events.length === 0) return <p className="text-sm text-slate-400">No stored events.</p>;
  return (
    // The table scrolls inside its own box on a phone: a full time per row is wider than 390 px with the rest.
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm" data-testid="history">
        <thead className="text-xs uppercase tracking-wide text-slate-400">
          <tr>
            <th className="py-1 pr-4 font-medium">Time</th>
            <th className="py-1 pr-4 font-medium">Event</th>
            <th className="py-1 pr-4 font-medium">Owner</th>
            <th className="py-1 pr-4 font-medium">TTL</th>
            <th className="py-1 font-medium">Detail</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-800/70">
          {events.map((e) => (
            <tr key={e.id} data-testid="history-row" data-type={e.type}>
              <td className="py-1 pr-4 font-mono text-xs text-slate-400">
                <Time at={e.at} />
              </td>
              <td className={`py-1 pr-4 font-medium ${TYPE_CLASS[e.type]}`}>{e.type}</td>
              <td className="py-1 pr-4 font-mono text-xs" title={e.owner ?? ""}>
                {shorten(e.owner, 28)}
              </td>
              <td className="py-1 pr-4 font-mono text-xs">
                {e.ttlMs === undefined ? "" : e.ttlMs === null ? "none" : formatDuration(e.ttlMs)}
              </td>
              <td className="py-1 text-xs text-slate-400">{describe(e)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
