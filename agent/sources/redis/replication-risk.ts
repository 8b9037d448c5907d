/**
 * The failover case from the literature: a lock written to a master but not yet to its replica is handed to a
 * second client if the master fails now and the replica is promoted. Pure decisions over what the replication
 * watcher read: which locks have been missing on a replica for long enough to be more than normal lag, and the
 * per-node view (role, offset, lag) for SourceStatus.nodes.
 */
import type { Hazard, NodeStatus } from "../../../lib/contract/lock";
import type { ReplicationInfo } from "./replication-info";

/**
 * Consecutive polls a lock must be missing on a replica before it is flagged: replication normally trails by
 * well under a millisecond, so one miss is usually a write caught in flight; two polls apart is not.
 */
export const REQUIRED_MISSES = 2;

export const NOT_REPLICATED = "not-replicated";

const MAX_NAMED = 5;

/** replica address -> lock id -> consecutive polls the lock was missing there. */
export type MissCounts = ReadonlyMap<string, ReadonlyMap<string, number>>;

/**
 * What one replica's check found this poll: the ids of the master's locks it does not have. `acknowledged`: the
 * replica did not answer the agent, so this is the master's account (see unacknowledged), not a read.
 */
export interface ReplicaCheck {
  replica: string;
  missing: readonly string[];
  acknowledged?: boolean;
}

/** When the watcher first saw a lock, and the master's replication offset then. */
export interface FirstSeen {
  /** Read after the lock was seen on the master, so at or past the offset of the write that made it. */
  readonly offset: number;
  readonly atMs: number;
}

/** Replicas acknowledge their offset once a second; an acknowledgement older than this is overdue. */
export const ACK_GRACE_MS = 2000;

/**
 * A replica that does not answer the agent (frozen, sleeping, cut off) may still be listed by its master with
 * the offset it last acknowledged. A lock first seen when the master was already past that offset, long enough
 * ago that an acknowledgement was due, is not confirmed on that replica. A lock written before the replica's last
 * acknowledgement is never claimed.
 */
export function unacknowledged(
  ids: readonly string[],
  firstSeen: ReadonlyMap<string, FirstSeen>,
  replicaOffset: number | undefined,
  nowMs: number,
  graceMs = ACK_GRACE_MS,
): string[] {
  if (replicaOffset === undefined) return [];
  return ids.filter((id) => {
    const f = firstSeen.get(id);
    return f !== undefined && f.offset > replicaOffset && nowMs - f.atMs >= graceMs;
  });
}

/**
 * Next miss counts. Only replicas that answered this poll keep counts (an unanswered check proves nothing, so it
 * starts over); a lock found on a replica, or no longer on the master, starts over too.
 */
export function countMisses(prev: MissCounts, checks: readonly ReplicaCheck[]): Map<string, Map<string, number>> {
  const next = new Map<string, Map<string, number>>();
  for (const { replica, missing } of checks) {
    const before = prev.get(replica);
    const counts = new Map<string, number>();
    for (const id of missing) counts.set(id, (before?.get(id) ?? 0) + 1);
    next.set(replica, counts);
  }
  return next;
}

/**
 * One `not-replicated` hazard per lock missing on at least one replica for `required` polls in a row. The message
 * names the replicas and no counters, so it stays the same (and sends no update) while the condition lasts.
 */
export function notReplicatedHazards(
  misses: MissCounts,
  required = REQUIRED_MISSES,
  /** Replicas judged by the master's account this poll (they did not answer the agent). */
  unanswered: ReadonlySet<string> = new Set(),
): Map<string, Hazard[]> {
  const replicasById = new Map<string, string[]>();
  for (const [replica, counts] of misses) {
    for (const [id, n] of counts) {
      if (n < required) continue;
      const list = replicasById.get(id) ?? [];
      list.push(replica);
      replicasById.set(id, list);
    }
  }
  const out = new Map<string, Hazard[]>();
  for (const [id, replicas] of replicasById) {
    replicas.sort();
    // Named up to a handful: the message must stay short whatever the fleet (the contract caps text at 4 KiB).
    const named = replicas
      .slice(0, MAX_NAMED)
      .map((r) => (unanswered.has(r) ? `${r} (which has not acknowledged it)` : r));
    if (replicas.length > MAX_NAMED) named.push(`${replicas.length - MAX_NAMED} more`);
    const where = replicas.length === 1 ? `replica ${named[0]}` : `replicas ${named.join(", ")}`;
    out.set(id, [
      {
        code: NOT_REPLICATED,
        severity: "critical",
        message:
          `On the master but not on ${where} for ${required} polls in a row: if the master fails now, ` +
          `a failover promotes a replica without this lock and hands it to a second client.`,
      },
    ]);
  }
  return out;
}

/** How one replica's check went, by its announced address. */
export interface ReplicaProbe {
  address: string;
  up: boolean;
  latencyMs?: number;
  error?: string;
}

/**
 * The nodes behind one watched Redis node: itself first, then the replicas its INFO lists with their offsets and
 * byte lag. A master without replicas outside a cluster is "standalone".
 */
export function replicationNodes(
  self: { id: string; up: boolean; error?: string; cluster: boolean; replicaId: (address: string) => string },
  info: ReplicationInfo | null,
  probes: readonly ReplicaProbe[],
  infoError?: string,
): NodeStatus[] {
  if (!info) {
    const node: NodeStatus = { id: self.id, role: "unknown", up: self.up };
    const error = self.error ?? infoError;
    if (error) node.error = error;
    return [node];
  }
  if (info.role === "replica") {
    const node: NodeStatus = { id: self.id, role: "replica", up: self.up };
    if (info.offset !== undefined) node.offset = info.offset;
    const error =
      self.error ?? (info.linkUp ? undefined : `replication link to master ${info.masterAddress ?? "?"} is down`);
    if (error) node.error = error;
    return [node];
  }
  const master: NodeStatus = {
    id: self.id,
    role: info.replicas.length > 0 || self.cluster ? "master" : "standalone",
    up: self.up,
  };
  if (info.offset !== undefined) master.offset = info.offset;
  if (self.error) master.error = self.error;
  const byAddress = new Map(probes.map((p) => [p.address, p]));
  const replicas = info.replicas.map((r): NodeStatus => {
    const probe = byAddress.get(r.address);
    // Not probed (replica checks off, or just listed): the master's word on its link is all there is.
    const node: NodeStatus = { id: self.replicaId(r.address), role: "replica", up: probe?.up ?? r.state === "online" };
    if (probe?.latencyMs !== undefined) node.latencyMs = probe.latencyMs;
    if (r.offset !== undefined) node.offset = r.offset;
    if (r.offset !== undefined && info.offset !== undefined) node.lagBytes = Math.max(0, info.offset - r.offset);
    const error = r.state !== "online" ? `replication state ${r.state}` : probe?.error;
    if (error) node.error = error;
    return node;
  });
  return [master, ...replicas];
}
