"use client";

import { useMemo } from "react";
import { Time } from "../time/time";
import { useLiveLocks, useLockView, useNow } from "../live/live-locks-provider";
import { NodeHealthStrip, SkewLine } from "./node-health";
import { QuorumGrid } from "./quorum-grid";
import { redlockGroups, type GroupView, type NodeHealth } from "./redlock-model";

const REDLOCK_VIEW = { backend: "redlock", sort: "resource", limit: 1000 };

/** Redlock groups, live: each member's health and clocks, and every resource across the members. */
export function RedlockView() {
  const { sources, connection } = useLiveLocks();
  // Its own subscription: Redlock resources only, the first 1,000 (a grid beyond that is not readable anyway).
  const { rows: locks } = useLockView(REDLOCK_VIEW);
  // A second is fine enough for TTL and validity countdowns, and keeps a large grid cheap to re-render.
  const now = useNow(500);
  const groups = useMemo(() => redlockGroups(sources, locks.values(), now), [sources, locks, now]);

  return (
    <div className="space-y-6">
      <div className="flex items-baseline gap-3">
        <h1 className="text-lg font-semibold text-slate-100">Redlock groups</h1>
        <span className="text-xs text-slate-400">
          votes count only nodes that answered; a cell marked ? is a node that did not
        </span>
      </div>
      {groups.length === 0 ? (
        <p className="text-sm text-slate-400" data-testid="redlock-empty">
          {connection === "live"
            ? "No Redlock group is watched. Set REDLOCK_NODES (or redlockGroups in the config file) on an agent."
            : "Connecting to the dashboard…"}
        </p>
      ) : (
        groups.map((g) => <GroupSection key={g.key} group={g} />)
      )}
    </div>
  );
}

function GroupSection({ group: g }: { group: GroupView }) {
  const counts = { up: 0, slow: 0, down: 0 };
  for (const n of g.nodes) counts[n.health]++;
  const health = new Map<string, NodeHealth>(g.nodes.map((n) => [n.id, n.health]));
  const quorumAtStake = g.nodes.length > 0 && counts.up + counts.slow < g.needed;
  return (
    <section className="space-y-2" data-testid="redlock-group" data-group={g.name}>
      <header className="flex flex-wrap items-baseline gap-x-4 gap-y-1">
        <h2 className="font-mono text-base font-semibold text-slate-100">{g.name}</h2>
        <span className="text-xs text-slate-400">
          {g.nodeOrder.length} nodes · quorum {g.needed} · <span className="text-emerald-300">{counts.up} up</span>
          {counts.slow > 0 ? <span className="text-amber-300"> · {counts.slow} slow</span> : null}
          {counts.down > 0 ? <span className="text-rose-300"> · {counts.down} down</span> : null}
        </span>
        <span className="text-xs text-slate-400">agent {g.agentId}</span>
        {quorumAtStake ? (
          <span className="rounded bg-rose-600 px-1.5 py-0.5 text-xs font-semibold text-white">
            fewer than {g.needed} nodes answering: no lock can have a quorum
          </span>
        ) : null}
        {g.status?.lastScanAt ? (
          <span className="ml-auto text-xs text-slate-400">
            polled in {g.status.lastScanMs ?? "?"} ms at <Time at={g.status.lastScanAt} />
          </span>
        ) : null}
      </header>
      <NodeHealthStrip group={g} />
      <SkewLine skew={g.skew} />
      {g.rows.length === 0 ? (
        <p className="rounded border border-slate-800 px-3 py-6 text-center text-sm text-slate-400">
          No lock held on this group right now.
        </p>
      ) : (
        <QuorumGrid nodeOrder={g.nodeOrder} health={health} rows={g.rows} />
      )}
    </section>
  );
}
