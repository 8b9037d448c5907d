"use client";

import type { Lock } from "@/lib/contract/lock";
import { useLiveLocks, useNow } from "../live/live-locks-provider";
import { QuorumGrid } from "./quorum-grid";
import { columnOrder, gridRow, nodeHealth, type NodeHealth } from "./redlock-model";

/** The quorum of one Redlock lock on its detail page: its row of the Redlock grid, counting down live. */
export function QuorumPanel({ lock, receivedAt }: { lock: Lock; receivedAt: number }) {
  const { sources } = useLiveLocks();
  const now = useNow(500);
  if (!lock.quorum) return null;
  const group = sources.find((s) => s.kind === "redlock" && s.id === lock.source && s.agentId === lock.agentId);
  const members = group?.nodes ?? [];
  const order = columnOrder(
    members.map((n) => n.id),
    [lock],
  );
  const health = new Map<string, NodeHealth>(members.map((n) => [n.id, nodeHealth(n)]));
  return (
    <section data-testid="quorum-panel">
      <h2 className="mb-2 text-sm font-semibold uppercase tracking-wide text-slate-400">
        Quorum on group <span className="font-mono normal-case">{lock.quorum.group}</span>
      </h2>
      <QuorumGrid nodeOrder={order} health={health} rows={[gridRow({ lock, receivedAt }, order, now)]} link={false} />
    </section>
  );
}
