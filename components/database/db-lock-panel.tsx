"use client";

import type { DbSession, Lock } from "@/lib/contract/lock";
import { useNow } from "../live/live-locks-provider";
import { formatDuration } from "../locks/format";

function age(iso: string | null | undefined, now: number): string {
  return iso ? `${formatDuration(Math.max(0, now - Date.parse(iso)))} ago` : "—";
}

function SessionLine({ s, now }: { s: DbSession; now: number }) {
  return (
    <span className="font-mono">
      pid {s.pid}
      <span className="text-slate-400">
        {s.application ? ` · "${s.application}"` : ""} · {s.user ?? "?"}@{s.client ?? "?"}
        {s.database ? ` · db ${s.database}` : ""} · {s.state ?? "?"}
        {s.stateChange ? ` (${age(s.stateChange, now)})` : ""}
        {s.xactStart ? ` · transaction ${age(s.xactStart, now)}` : ""}
        {s.backendStart ? ` · session started ${s.backendStart}` : ""}
      </span>
      {s.query ? <span className="block truncate text-slate-400">{s.query}</span> : null}
    </span>
  );
}

/**
 * The sessions behind a PostgreSQL advisory lock or a MySQL/MariaDB user-level lock: holders with the level and
 * why, waiters with their wait and the chain of sessions up to the root blocker.
 */
export function DbLockPanel({ lock }: { lock: Lock }) {
  const now = useNow(1000);
  const db = lock.database;
  if (!db) return null;
  return (
    <section data-testid="db-lock-panel" className="space-y-2">
      <h2 className="text-sm font-semibold uppercase tracking-wide text-slate-400">
        Sessions{" "}
        <span className="font-normal normal-case text-slate-400">
          {db.engine} · key {db.keyKind}
          {db.database ? ` · database ${db.database}` : ""}
        </span>
      </h2>
      <ol className="space-y-1 text-sm" data-testid="db-holders">
        {db.holders.map((h) => (
          <li key={`h-${h.session.pid}`}>
            <span className="mr-2 rounded bg-emerald-900/50 px-1 text-xs text-emerald-300">holds {h.mode}</span>
            <SessionLine s={h.session} now={now} />
            <span className="block text-xs text-slate-400">
              {h.level}-level: {h.levelEvidence}
            </span>
          </li>
        ))}
      </ol>
      {db.waiters.length > 0 ? (
        <ol className="space-y-1 text-sm" data-testid="db-waiters">
          {db.waiters.map((w) => (
            <li key={`w-${w.session.pid}`}>
              <span className="mr-2 rounded bg-amber-900/50 px-1 text-xs text-amber-300">
                waits {w.since ? formatDuration(Math.max(0, now - Date.parse(w.since))) : ""}
              </span>
              <SessionLine s={w.session} now={now} />
              {w.chain.length > 1 ? (
                <span className="block text-xs text-slate-400" data-testid="db-chain">
                  blocked by {w.blockedBy.map((p) => `pid ${p}`).join(", ")} · chain{" "}
                  {w.chain.map((p) => `pid ${p}`).join(" → ")} (root)
                </span>
              ) : null}
            </li>
          ))}
        </ol>
      ) : null}
    </section>
  );
}
