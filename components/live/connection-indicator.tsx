"use client";

import { useLiveLocks } from "./live-locks-provider";

const LABEL = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…" } as const;

export function ConnectionIndicator() {
  const { connection, sources } = useLiveLocks();
  const down = sources.filter((s) => !s.up);
  const dot = connection === "live" ? (down.length > 0 ? "bg-amber-400" : "bg-emerald-400") : "bg-rose-500";
  return (
    <div className="flex items-center gap-3 text-xs text-slate-400" data-testid="connection" data-state={connection}>
      <span className="flex items-center gap-1.5">
        <span className={`inline-block h-2 w-2 rounded-full ${dot} ${connection === "live" ? "animate-pulse" : ""}`} />
        {LABEL[connection]}
      </span>
      <span title={sources.map((s) => `${s.id}: ${s.up ? "up" : `down (${s.error ?? "?"})`}`).join("\n")}>
        {sources.length} source{sources.length === 1 ? "" : "s"}
        {down.length > 0 ? <span className="text-amber-400"> · {down.length} down</span> : null}
      </span>
    </div>
  );
}
