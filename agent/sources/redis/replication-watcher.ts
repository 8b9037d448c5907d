/**
 * Replication risk for one watched Redis node: each poll it reads INFO replication on the node and, when the node
 * is a master, asks every replica whether it has the master's lock keys (pipelined EXISTS in bounded batches, on
 * read-only connections). The decisions are in replication-risk.ts; this file only does the I/O.
 */
import type { Hazard, NodeStatus } from "../../../lib/contract/lock";
import { parseReplicationInfo, type ReplicationInfo } from "./replication-info";
import {
  countMisses,
  notReplicatedHazards,
  replicationNodes,
  unacknowledged,
  type FirstSeen,
  type MissCounts,
  type ReplicaCheck,
  type ReplicaProbe,
} from "./replication-risk";
import type { AnnotatedChanges, AnnotatedLock, LockAnnotator } from "./redis-source";
import type { RedisNodePort, RedisReplicaPort } from "./redis-port";

/** Keys per EXISTS pipeline on a replica: small replies, and other clients' commands interleave. */
export const EXISTS_BATCH = 250;

export interface ReplicaConnection {
  port: RedisReplicaPort;
  /** Settles once the first connection attempt has finished, connected or not (failures retry in the background). */
  ready: Promise<void>;
  close(): void;
}

export interface ReplicationWatcherOptions {
  /** How the watched node is shown in SourceStatus.nodes, e.g. `redis://127.0.0.1:6379`. */
  nodeId: string;
  node: RedisNodePort;
  /** Cluster masters are "master" even without replicas, and their replicas need READONLY. */
  cluster: boolean;
  /** REDIS_REPLICA_CHECK: connect to replicas and compare. Off, nodes are still shown from the master's INFO. */
  checkReplicas: boolean;
  /** The id a replica announced at `address` is shown by. */
  replicaId(address: string): string;
  /** A read-only connection to the replica announced at `address` (REDIS_ADDRESS_MAP applied by the caller). */
  connectReplica(address: string): ReplicaConnection;
  existsBatch?: number;
  now?: () => number;
}

export class ReplicationWatcher implements LockAnnotator {
  private info: ReplicationInfo | null = null;
  private infoError: string | undefined;
  private read = false;
  private probes: ReplicaProbe[] = [];
  private misses: MissCounts = new Map();
  private firstSeen = new Map<string, FirstSeen>();
  private lastOffset: number | undefined;
  /** firstSeen holds exactly the locks of the previous call (so that call's changes can update it). */
  private remembered = false;
  private readonly replicas = new Map<string, ReplicaConnection>();
  private readonly now: () => number;

  constructor(private readonly opts: ReplicationWatcherOptions) {
    this.now = opts.now ?? Date.now;
  }

  async annotate(
    locks: readonly AnnotatedLock[],
    changes?: AnnotatedChanges,
  ): Promise<ReadonlyMap<string, readonly Hazard[]>> {
    this.read = true;
    try {
      this.info = parseReplicationInfo(await this.opts.node.info("replication"));
      this.infoError = this.info ? undefined : "INFO replication could not be read";
    } catch (err) {
      this.info = null;
      this.infoError = `INFO replication: ${err instanceof Error ? err.message : String(err)}`;
    }
    this.remember(locks, changes);
    // Locks on a replica are copies: the risk is about what a master has that its replicas lack.
    const links = this.info?.role === "master" && this.opts.checkReplicas ? this.info.replicas : [];
    await this.connect(links.map((l) => l.address));
    const results = await Promise.all(links.map((l) => this.check(l.address, l.offset, locks)));
    this.probes = results.map((r) => r.probe);
    const checks = results.flatMap((r) => (r.check ? [r.check] : []));
    this.misses = countMisses(this.misses, checks);
    return notReplicatedHazards(
      this.misses,
      undefined,
      new Set(checks.filter((c) => c.acknowledged).map((c) => c.replica)),
    );
  }

  /** The master's offset when each lock was first seen; a master whose offset went back restarted: start over. */
  private remember(locks: ReadonlyArray<{ id: string }>, changes: AnnotatedChanges | undefined): void {
    const offset = this.info?.role === "master" ? this.info.offset : undefined;
    const restarted = offset === undefined || (this.lastOffset !== undefined && offset < this.lastOffset);
    if (restarted) this.firstSeen.clear();
    this.lastOffset = offset;
    const wasExact = this.remembered;
    this.remembered = offset !== undefined;
    if (offset === undefined) return;
    // One record for every lock first seen by this call: one each was 100,000 objects and 200,000 boxed numbers at
    // 100,000 locks (a heap snapshot, 2026-12-07), a tenth of what the collector marks. Never changed once stored.
    const seen: FirstSeen = { offset, atMs: this.now() };
    // By what changed: a pass over 100,000 tracked locks at every poll was the agent's largest cost in track mode.
    if (!restarted && wasExact && changes) {
      for (const id of changes.removed) this.firstSeen.delete(id);
      for (const id of changes.added) if (!this.firstSeen.has(id)) this.firstSeen.set(id, seen);
      return;
    }
    const present = new Set(locks.map((l) => l.id));
    for (const id of this.firstSeen.keys()) if (!present.has(id)) this.firstSeen.delete(id);
    for (const id of present) if (!this.firstSeen.has(id)) this.firstSeen.set(id, seen);
  }

  /** The node and its replicas for SourceStatus.nodes; undefined before the first read. */
  nodes(self: { up: boolean; error?: string }): NodeStatus[] | undefined {
    if (!this.read) return undefined;
    return replicationNodes(
      { id: this.opts.nodeId, ...self, cluster: this.opts.cluster, replicaId: (a) => this.opts.replicaId(a) },
      this.info,
      this.probes,
      this.infoError,
    );
  }

  close(): void {
    for (const c of this.replicas.values()) c.close();
    this.replicas.clear();
  }

  /** Opens connections to replicas that appeared, closes those to replicas that left. */
  private async connect(addresses: readonly string[]): Promise<void> {
    for (const [address, c] of this.replicas) {
      if (addresses.includes(address)) continue;
      c.close();
      this.replicas.delete(address);
    }
    const opened: Array<Promise<void>> = [];
    for (const address of addresses) {
      if (this.replicas.has(address)) continue;
      const c = this.opts.connectReplica(address);
      this.replicas.set(address, c);
      opened.push(c.ready);
    }
    await Promise.all(opened);
  }

  private async check(
    address: string,
    acknowledgedOffset: number | undefined,
    locks: readonly AnnotatedLock[],
  ): Promise<{ probe: ReplicaProbe; check?: ReplicaCheck }> {
    const port = this.replicas.get(address)!.port;
    const batch = this.opts.existsBatch ?? EXISTS_BATCH;
    const missing: string[] = [];
    let latencyMs: number | undefined;
    try {
      // One round trip even with no locks (the port sends PING then): proof the replica answers, and its latency.
      for (let i = 0; i === 0 || i < locks.length; i += batch) {
        const slice = locks.slice(i, i + batch);
        const started = this.now();
        const answers = await port.exists(slice.map((l) => Buffer.from(l.name, "latin1")));
        latencyMs ??= this.now() - started;
        answers.forEach((has, j) => {
          if (!has) missing.push(slice[j]!.id);
        });
      }
    } catch (err) {
      // No answer is no proof either way; what the master says the replica acknowledged still is.
      const probe = { address, up: false, error: err instanceof Error ? err.message : String(err) };
      const ids = locks.map((l) => l.id);
      const missing = unacknowledged(ids, this.firstSeen, acknowledgedOffset, this.now());
      return { probe, check: { replica: address, missing, acknowledged: true } };
    }
    const probe: ReplicaProbe = { address, up: true };
    if (latencyMs !== undefined) probe.latencyMs = latencyMs;
    return { probe, check: { replica: address, missing } };
  }
}
