/**
 * Which cluster nodes to watch, and how a new topology maps onto the ones watched so far. Pure.
 *
 * SCAN only sees the node it runs on, so every master that serves slots is watched by its own RedisSource (a
 * "member"). A failover promotes a replica that already holds the same keys: its member is not a new source but
 * the old one moved to the new node (same tracker, same lock ids), so nothing is reported released or acquired,
 * and a lock the new master lacks is reported lost by a direct read.
 */
import { slotsOverlap, type ClusterNode, type SlotRange } from "./cluster-nodes";

/** What the cluster source remembers of a member from the previous topology. */
export interface MemberView {
  nodeId: string;
  address: string;
  slots: readonly SlotRange[];
  replicaIds: readonly string[];
  /** The agent cannot reach the member's node now. */
  down?: boolean;
}

export interface TopologyPlan {
  /** Members whose node is still a master at the same address. */
  keep: Array<{ nodeId: string; node: ClusterNode }>;
  /** Members whose keys are now served by another node (failover) or at another address. */
  retarget: Array<{ from: string; to: ClusterNode; reason: "failover" | "address-changed" }>;
  /** Masters nobody watches yet. */
  add: ClusterNode[];
  /** Members whose node serves no slots any more and has no successor: stop watching, report nothing. */
  retire: string[];
}

/**
 * Masters that serve slots and have an address. A master flagged `fail` whose slots another master now serves is
 * a node some view has not caught up on (its replica took over): the live one wins.
 */
export function watchedMasters(nodes: readonly ClusterNode[]): ClusterNode[] {
  const masters = nodes.filter((n) => n.role === "master" && n.slots.length > 0 && n.address !== null);
  return masters.filter(
    (n) =>
      !n.failed ||
      !masters.some((o) => o !== n && !o.failed && o.configEpoch > n.configEpoch && slotsOverlap(o.slots, n.slots)),
  );
}

export function replicaIdsOf(nodes: readonly ClusterNode[], masterId: string): string[] {
  return nodes.filter((n) => n.role === "replica" && n.masterId === masterId).map((n) => n.id);
}

export function planTopology(members: readonly MemberView[], nodes: readonly ClusterNode[]): TopologyPlan {
  const masters = watchedMasters(nodes);
  const byId = new Map(masters.map((n) => [n.id, n]));
  const memberIds = new Set(members.map((m) => m.nodeId));
  const claimed = new Set<string>();
  const plan: TopologyPlan = { keep: [], retarget: [], add: [], retire: [] };
  const orphans: MemberView[] = [];
  for (const m of members) {
    const n = byId.get(m.nodeId);
    if (!n) {
      orphans.push(m);
      continue;
    }
    claimed.add(n.id);
    if (n.address === m.address) plan.keep.push({ nodeId: m.nodeId, node: n });
    else plan.retarget.push({ from: m.nodeId, to: n, reason: "address-changed" });
  }
  const free = (n: ClusterNode) => !claimed.has(n.id) && !memberIds.has(n.id);
  const listed = new Map(nodes.map((n) => [n.id, n]));
  for (const m of orphans) {
    // A node still alive as a master that serves nothing gave its slots away (resharding): its keys moved with
    // them, and their new masters report them. A node gone, failing or demoted to replica was failed over.
    const now = listed.get(m.nodeId);
    const failedOver = !now || now.failed || now.suspected || !now.linkUp || now.role === "replica" || m.down === true;
    // Its own replica promoted is the textbook failover; a master that took over its slots covers the rest.
    const successor = !failedOver
      ? undefined
      : (masters.find((n) => free(n) && m.replicaIds.includes(n.id)) ??
        masters.find((n) => free(n) && slotsOverlap(n.slots, m.slots)));
    if (successor) {
      claimed.add(successor.id);
      plan.retarget.push({ from: m.nodeId, to: successor, reason: "failover" });
    } else {
      plan.retire.push(m.nodeId);
    }
  }
  plan.add = masters.filter(free);
  return plan;
}
