/**
 * The tracker re-sends a lock whenever anything but `ttlMs` and `observedAt` changed. A Redlock lock's quorum view
 * carries per-node TTLs, latencies and the validity, which change at every poll, so every lock would be re-sent on
 * every poll. This filter forwards an upsert only when the view really changed: a state, vote, presence, token or
 * hazard; an event for the lock; or a node's TTL that moved off its countdown (a renewal on some nodes only).
 * Between upserts the dashboard counts the TTLs down from `observedAt`, which is exact while nothing changes.
 */
import type { Lock } from "../../../lib/contract/lock";
import { DEFAULT_TOLERANCE_MS } from "../../core/classify";
import type { TrackerOutput } from "../../core/tracker";

interface Sent {
  stable: string;
  observedAtMs: number;
  ttls: Array<number | null>;
}

export function stableFingerprint(lock: Lock): string {
  const { ttlMs: _t, observedAt: _o, quorum, ...rest } = lock;
  if (!quorum) return JSON.stringify(rest);
  const { validityMs: _v, perNode, ...q } = quorum;
  const nodes = perNode.map(({ ttlMs: _n, latencyMs: _l, error: _e, ...node }) => node);
  return JSON.stringify({ ...rest, quorum: { ...q, perNode: nodes } });
}

export class QuorumUpsertFilter {
  private readonly sent = new Map<string, Sent>();

  constructor(private readonly toleranceMs = DEFAULT_TOLERANCE_MS) {}

  filter(out: TrackerOutput): TrackerOutput {
    const withEvents = new Set(out.events.map((e) => e.lockId));
    const upserts = out.upserts.filter((lock) => {
      const next = this.summary(lock);
      const prev = this.sent.get(lock.id);
      const send = !prev || withEvents.has(lock.id) || prev.stable !== next.stable || this.offCountdown(prev, next);
      if (send) this.sent.set(lock.id, next);
      return send;
    });
    for (const id of out.removed) this.sent.delete(id);
    return { events: out.events, upserts, removed: out.removed };
  }

  private summary(lock: Lock): Sent {
    return {
      stable: stableFingerprint(lock),
      observedAtMs: Date.parse(lock.observedAt),
      ttls: lock.quorum?.perNode.map((n) => n.ttlMs) ?? [],
    };
  }

  private offCountdown(prev: Sent, next: Sent): boolean {
    const elapsed = next.observedAtMs - prev.observedAtMs;
    return next.ttls.some((ttl, i) => {
      const before = prev.ttls[i];
      if (before === undefined || (before === null) !== (ttl === null)) return true;
      if (before === null || ttl === null) return false;
      return Math.abs(ttl - Math.max(0, before - elapsed)) > this.toleranceMs;
    });
  }
}
