/**
 * A Redis Cluster as one watched source: one RedisSource per master that serves slots (SCAN sees only the node it
 * runs on), composed so the agent loop sees one status per master, one merged poll, and releases routed to the
 * master that has the lock.
 *
 * Lock ids: every member derives ids from one cluster-wide scope (`cluster:<seed id>`) and the key, while
 * Lock.source is the master that serves the key's slot. A key lives in exactly one slot, so the id is unique in
 * the cluster, and it does not change when a failover or a resharding moves the key to another master. A
 * failover moves the member itself to the promoted replica (RedisSource.retarget): same tracker, so no lock is
 * reported released or acquired; keys the new master lacks are reported lost by a direct read.
 *
 * The topology (CLUSTER NODES) is re-read every refreshMs, and at the next poll after any member was down or
 * answered MOVED for a slot the last topology said was its own.
 */
import type { Lock, SourceStatus, NodeStatus } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import { mergeInto, type TrackerOutput } from "../../core/tracker";
import type { WatchedSource } from "../source-port";
import { parseClusterNodes, parseRedirect, slotsContain, type ClusterNode, type SlotRange } from "./cluster-nodes";
import { planTopology, replicaIdsOf, watchedMasters } from "./cluster-topology";
import type { KeySample, RedisLockPort, RedisNodePort } from "./redis-port";
import type { RedisReleasePort } from "./redis-release";
import { RedisSource, type RedisSourceOptions } from "./redis-source";
import type { ReplicationWatcher } from "./replication-watcher";

/** Connections to one master. */
export interface ClusterNodeHandle {
  lock: RedisLockPort;
  node: RedisNodePort;
  release: RedisReleasePort;
  /** Settles once the first connection attempt has finished. */
  ready: Promise<void>;
  close(): void;
}

export interface RedisClusterSourceOptions {
  /** The configured node the cluster was found through: names the cluster and is asked for the topology first. */
  seedId: string;
  seedNode: RedisNodePort;
  agentId: string;
  newId: () => string;
  log: (line: string) => void;
  /** Scan, sampling and history settings every member shares. */
  source: Omit<RedisSourceOptions, "sourceId" | "agentId" | "newId" | "lockIdScope" | "annotator">;
  /** Re-read the topology at least this often (REDIS_CLUSTER_REFRESH_MS). */
  refreshMs: number;
  /** The source id a master announced at `address` is shown by, e.g. `redis://10.0.0.7:6379/0`. */
  sourceIdOf(address: string): string;
  /** The node id (no database) for SourceStatus.nodes. */
  nodeIdOf(address: string): string;
  /** Connects to the master announced at `address`; onStatus reports connection changes. */
  connect(address: string, onStatus: (up: boolean, error?: string) => void): ClusterNodeHandle;
  /** The replication watcher of one master, or null when replicas are not watched. */
  watch?(address: string, node: RedisNodePort): ReplicationWatcher | null;
  /** Keyspace notifications for one master; returns what stops them. */
  subscribe?(address: string, source: RedisSource): () => void;
  now?: () => number;
}

interface Member {
  nodeId: string;
  address: string;
  slots: SlotRange[];
  replicaIds: string[];
  handle: ClusterNodeHandle;
  source: RedisSource;
  watcher: ReplicationWatcher | null;
  unsubscribe: (() => void) | null;
  /** Which of the member's connections may report its status: a replaced or closed one may not. */
  generation: number;
}

/**
 * A member's read port: MOVED for a slot the topology gives to another node is a key that moved (resharding);
 * MOVED for a slot the topology says is this node's own means the topology is stale (a failover): the read fails,
 * so the poll changes nothing, and the topology is re-read first thing next poll.
 */
class ClusterMemberPort implements RedisLockPort {
  constructor(
    private readonly inner: RedisLockPort,
    private readonly ownsSlot: (slot: number) => boolean,
    private readonly onStale: () => void,
  ) {}

  scan(cursor: string, count: number, match?: Buffer) {
    return this.inner.scan(cursor, count, match);
  }

  async sample(keys: Buffer[], expectedTypes: ReadonlyArray<string | undefined>, previewBytes: number) {
    const samples: KeySample[] = await this.inner.sample(keys, expectedTypes, previewBytes);
    for (const s of samples) {
      if (s.moved === undefined) continue;
      const r = parseRedirect(s.moved);
      this.onStale();
      if (!r || (r.kind === "MOVED" && this.ownsSlot(r.slot))) throw new Error(`cluster topology changed: ${s.moved}`);
    }
    return samples;
  }

  /**
   * The sweep's cheap re-read and companion check, as on a single node. Any error there (a MOVED, a CROSSSLOT) is
   * a null, which sends the key to sample() above, where a redirect is judged.
   */
  async resample(keys: Buffer[], types: readonly string[], previewBytes: number) {
    return this.inner.resample ? this.inner.resample(keys, types, previewBytes) : keys.map(() => null);
  }

  async countExisting(groups: Buffer[][]) {
    return this.inner.countExisting ? this.inner.countExisting(groups) : groups.map(() => null);
  }

  numsub(channels: string[]) {
    return this.inner.numsub(channels);
  }

  runId() {
    return this.inner.runId();
  }

  halvesScan() {
    return this.inner.halvesScan?.() ?? false;
  }

  /** Empty when the inner port cannot say: the budget then charges reply times. */
  async commandStats() {
    return (await this.inner.commandStats?.()) ?? "";
  }
}

const EMPTY: TrackerOutput = { events: [], upserts: [], removed: [] };

export class RedisClusterSource implements WatchedSource {
  private members: Member[] = [];
  private topology: ClusterNode[] = [];
  private topologyAtMs = Number.NEGATIVE_INFINITY;
  private topologyError: string | undefined = "cluster topology not read yet";
  private stale = true;
  private readonly now: () => number;
  private readonly lockIdScope: string;

  constructor(private readonly opts: RedisClusterSourceOptions) {
    this.now = opts.now ?? Date.now;
    this.lockIdScope = `cluster:${opts.seedId}`;
  }

  /** One line for the whole cluster (the agent loop lists statuses(), one per master). */
  status(): SourceStatus {
    const all = this.statuses();
    const s: SourceStatus = {
      id: this.opts.seedId,
      kind: "redis",
      up: this.members.length > 0 && all.every((x) => x.up),
      locks: all.reduce((n, x) => n + x.locks, 0),
      agentId: this.opts.agentId,
    };
    const error = this.members.length === 0 ? this.topologyError : all.find((x) => x.error)?.error;
    if (!s.up && error) s.error = error;
    return s;
  }

  statuses(): SourceStatus[] {
    if (this.members.length === 0) {
      return [
        {
          id: this.opts.seedId,
          kind: "redis",
          up: false,
          error: this.topologyError ?? "no master serves slots",
          locks: 0,
          agentId: this.opts.agentId,
        },
      ];
    }
    return this.members.map((m) => {
      const s = m.source.status();
      const nodes =
        m.watcher?.nodes({ up: s.up, ...(s.error ? { error: s.error } : {}) }) ?? this.topologyNodes(m, s.up);
      return { ...s, nodes };
    });
  }

  async poll(): Promise<TrackerOutput> {
    const before = this.lockOwners();
    if (this.stale || this.now() - this.topologyAtMs >= this.opts.refreshMs) await this.refreshTopology();
    if (this.members.length === 0) return EMPTY;
    const results = await Promise.all(this.members.map((m) => m.source.poll()));
    const out: TrackerOutput = { events: [], upserts: [], removed: [] };
    for (const r of results) mergeInto(out, r);
    if (this.members.some((m) => !m.source.status().up)) this.stale = true;
    return this.reconcile(before, out);
  }

  locks(): Lock[] {
    const byId = new Map<string, Lock>();
    for (const m of this.members) {
      for (const l of m.source.tracker.locks()) {
        const seen = byId.get(l.id);
        if (!seen || seen.observedAt < l.observedAt) byId.set(l.id, l);
      }
    }
    return [...byId.values()];
  }

  has(lockId: string): boolean {
    return this.members.some((m) => m.source.tracker.has(lockId));
  }

  async release(cmd: ReleaseCommand): Promise<{ result: ReleaseResult; output: TrackerOutput }> {
    const m = this.members.find((x) => x.source.tracker.has(cmd.lockId));
    if (!m) {
      const result: ReleaseResult = {
        outcome: "nothing-to-do",
        message: "no master of the cluster reports the lock now",
        plan: [],
        perNode: [],
      };
      return { result, output: EMPTY };
    }
    return m.source.release(cmd, m.handle.release);
  }

  close(): void {
    for (const m of this.members) this.closeMember(m);
    this.members = [];
  }

  /**
   * Keys move between members (resharding) and members are retired: a lock that left every member is removed
   * from the view without an event, an id another member still reports is not removed, and an `acquired` for a
   * lock the cluster already showed with the same owner is the same holding seen from its new node, not news.
   */
  private reconcile(before: ReadonlyMap<string, string | null>, out: TrackerOutput): TrackerOutput {
    const after = new Set(this.members.flatMap((m) => m.source.tracker.locks().map((l) => l.id)));
    const events = out.events.filter(
      (e) => !(e.type === "acquired" && before.has(e.lockId) && before.get(e.lockId) === e.owner),
    );
    const removed = new Set(out.removed);
    for (const id of before.keys()) removed.add(id);
    return { events, upserts: out.upserts, removed: [...removed].filter((id) => !after.has(id)) };
  }

  private lockOwners(): Map<string, string | null> {
    return new Map(this.members.flatMap((m) => m.source.tracker.locks().map((l) => [l.id, l.owner] as const)));
  }

  /** Asks the healthy members first, then the seed, then the rest: the first answer wins. */
  private async readTopology(): Promise<ClusterNode[] | null> {
    const up = this.members.filter((m) => m.source.status().up).map((m) => m.handle.node);
    const down = this.members.filter((m) => !m.source.status().up).map((m) => m.handle.node);
    let lastError = "no node answered CLUSTER NODES";
    for (const node of [...up, this.opts.seedNode, ...down]) {
      try {
        const nodes = parseClusterNodes(await node.clusterNodes());
        if (watchedMasters(nodes).length > 0) return nodes;
        lastError = "CLUSTER NODES lists no master that serves slots";
      } catch (err) {
        lastError = `CLUSTER NODES: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    this.topologyError = lastError;
    return null;
  }

  private async refreshTopology(): Promise<void> {
    this.topologyAtMs = this.now();
    const nodes = await this.readTopology();
    if (!nodes) return; // stays stale: tried again next poll
    this.topology = nodes;
    this.topologyError = undefined;
    this.stale = false;
    const plan = planTopology(
      this.members.map((m) => ({
        nodeId: m.nodeId,
        address: m.address,
        slots: m.slots,
        replicaIds: m.replicaIds,
        down: !m.source.status().up,
      })),
      nodes,
    );
    const opened: Array<Promise<void>> = [];
    const byId = new Map(this.members.map((m) => [m.nodeId, m]));
    for (const { nodeId, node } of plan.keep) {
      const m = byId.get(nodeId)!;
      m.slots = node.slots;
      m.replicaIds = replicaIdsOf(nodes, node.id);
    }
    for (const { from, to, reason } of plan.retarget) {
      const m = byId.get(from)!;
      const previous = m.source.status().id;
      this.closeMember(m);
      const address = to.address!;
      m.nodeId = to.id;
      m.address = address;
      m.slots = to.slots;
      m.replicaIds = replicaIdsOf(nodes, to.id);
      m.handle = this.connectMember(address, m, (up, error) => m.source.setConnection(up, error));
      m.watcher = this.opts.watch?.(address, m.handle.node) ?? null;
      m.source.retarget({
        sourceId: this.opts.sourceIdOf(address),
        port: this.memberPort(m.handle, () => m.slots),
        ...(m.watcher ? { annotator: m.watcher } : {}),
        failover: reason === "failover",
      });
      m.unsubscribe = this.opts.subscribe?.(address, m.source) ?? null;
      opened.push(m.handle.ready);
      this.opts.log(`cluster ${this.opts.seedId}: ${previous} -> ${this.opts.sourceIdOf(address)} (${reason})`);
    }
    const retired = new Set(plan.retire);
    for (const m of this.members) {
      if (!retired.has(m.nodeId)) continue;
      this.closeMember(m);
      this.opts.log(`cluster ${this.opts.seedId}: ${m.source.status().id} serves no slots now; no longer watched`);
    }
    this.members = this.members.filter((m) => !retired.has(m.nodeId));
    for (const node of plan.add) {
      const m = this.addMember(node, nodes);
      opened.push(m.handle.ready);
      this.opts.log(`cluster ${this.opts.seedId}: watching master ${m.source.status().id}`);
    }
    // A new connection's first command must not fail for want of a handshake (that would read as an outage).
    await Promise.all(opened);
  }

  private addMember(node: ClusterNode, nodes: readonly ClusterNode[]): Member {
    const address = node.address!;
    // The connection reports to the source, which needs the connection's port first.
    const ref: { source?: RedisSource } = {};
    const fields = {
      nodeId: node.id,
      address,
      slots: node.slots,
      replicaIds: replicaIdsOf(nodes, node.id),
      generation: 0,
    };
    const handle = this.connectMember(address, fields, (up, error) => ref.source?.setConnection(up, error));
    const watcher = this.opts.watch?.(address, handle.node) ?? null;
    const source = (ref.source = new RedisSource(
      this.memberPort(handle, () => fields.slots),
      {
        ...this.opts.source,
        sourceId: this.opts.sourceIdOf(address),
        agentId: this.opts.agentId,
        newId: this.opts.newId,
        lockIdScope: this.lockIdScope,
        ...(watcher ? { annotator: watcher } : {}),
      },
    ));
    const m: Member = Object.assign(fields, { handle, watcher, source, unsubscribe: null });
    m.unsubscribe = this.opts.subscribe?.(address, source) ?? null;
    this.members.push(m);
    return m;
  }

  private memberPort(handle: ClusterNodeHandle, slots: () => readonly SlotRange[]): RedisLockPort {
    return new ClusterMemberPort(
      handle.lock,
      (slot) => slotsContain(slots(), slot),
      () => (this.stale = true),
    );
  }

  /**
   * A member's connection, whose status reaches the source only while it is the member's current one. After a
   * failover the dead master's connection is closed and its "close" and "end" events can come after the promoted
   * replica's connection is ready: applied, they marked the new node down for good (seen in a loaded CI run).
   */
  private connectMember(
    address: string,
    member: { generation: number },
    report: (up: boolean, error?: string) => void,
  ): ClusterNodeHandle {
    const generation = ++member.generation;
    return this.opts.connect(address, (up, error) => {
      if (member.generation === generation) report(up, error);
    });
  }

  private closeMember(m: Member): void {
    m.generation++;
    m.unsubscribe?.();
    m.unsubscribe = null;
    m.watcher?.close();
    m.handle.close();
  }

  /** Before the replication watcher has read anything: the master and its replicas as the topology lists them. */
  private topologyNodes(m: Member, up: boolean): NodeStatus[] {
    const replicas = this.topology.filter((n) => n.role === "replica" && n.masterId === m.nodeId && n.address);
    return [
      { id: this.opts.nodeIdOf(m.address), role: "master", up },
      ...replicas.map((r) => ({ id: this.opts.nodeIdOf(r.address!), role: "replica", up: !r.failed && r.linkUp })),
    ];
  }
}
