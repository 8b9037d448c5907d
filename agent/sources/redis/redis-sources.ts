/**
 * Builds the watched sources for REDIS_URLS. Each configured node is asked INFO cluster once it answers: a
 * cluster node becomes a RedisClusterSource (every master watched), any other node a RedisSource; both get a
 * replication watcher (replicas, offsets, locks not yet replicated) and keyspace notifications when configured.
 */
import type { Redis } from "ioredis";
import type { Lock, SourceStatus } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import type { WatchedSource } from "../source-port";
import type { RedisTarget } from "../../config";
import type { TrackerOutput } from "../../core/tracker";
import { parseClusterEnabled } from "./cluster-nodes";
import { subscribeKeyspace, type NotificationMode } from "./keyspace-notifications";
import { nodeId, nodeUrl } from "./node-address";
import { MAX_PENDING_NOTIFIED, NotificationBatcher } from "./notification-batcher";
import { connectRedis, IoredisLockPort, IoredisNodePort, IoredisReleasePort, IoredisReplicaPort } from "./redis-client";
import { RedisClusterSource } from "./redis-cluster-source";
import type { RedisNodePort } from "./redis-port";
import { RedisSource } from "./redis-source";
import { ReplicationWatcher } from "./replication-watcher";
import { bcastPrefixes } from "./bcast-prefixes";
import { startTrackedReader, type ClientTracking } from "./client-tracking";
import { LeanCompanion } from "./lean-connection";

export interface RedisSourcesOptions {
  agentId: string;
  newId: () => string;
  log: (line: string) => void;
  lockPatterns: readonly string[];
  scanCount: number;
  /** REDIS_SCAN_STEP_US (RedisSourceOptions.scanStepUsec). */
  scanStepUsec?: number;
  /** Key visits per poll per node (see RedisSourceOptions); 0 = unlimited. */
  visitBudgetPerPoll: number;
  valuePreviewBytes: number;
  maxHoldMs: number;
  /** How long takeover and zombie hazards stay on a lock (RedisSourceOptions.hazardMemoryMs). */
  hazardMemoryMs?: number;
  commandTimeoutMs: number;
  keyspaceNotifications: NotificationMode;
  /** REDIS_REPLICA_CHECK: connect to replicas and check each master's locks there. */
  replicaCheck: boolean;
  /** REDIS_ADDRESS_MAP: announced host:port -> reachable host:port or URL. */
  addressMap: ReadonlyMap<string, string>;
  /** REDIS_CLUSTER_REFRESH_MS. */
  clusterRefreshMs: number;
  /** Changes seen between polls (keyspace notifications) are published through this. */
  push: (output: TrackerOutput) => void;
  /** REDIS_CHANGE_DETECTION, per node (each cluster master on its own). Default poll. */
  changeDetection?: "track" | "poll";
  /** REDIS_SWEEP_MS: the safety sweep's period in track mode. */
  sweepMs?: number;
  /** REDIS_SERVER_TIME_BUDGET_PERCENT: share of one core of each watched node; 0 or unset = unlimited. */
  serverTimeBudgetPercent?: number;
}

export interface RedisSources {
  /** One per configured node, in configuration order; a cluster node stands for its whole cluster. */
  sources: WatchedSource[];
  /** Settles once every node's first connection attempt and mode detection have finished. */
  ready: Promise<void>;
  close(): void;
}

export function createRedisSources(targets: readonly RedisTarget[], opts: RedisSourcesOptions): RedisSources {
  const watches = targets.map((t) => new RedisTargetSource(t, opts));
  return {
    sources: watches,
    ready: Promise.all(watches.map((w) => w.start())).then(() => undefined),
    close: () => watches.forEach((w) => w.close()),
  };
}

const EMPTY: TrackerOutput = { events: [], upserts: [], removed: [] };

/** A node's reading connection and its lean companion: CLIENT TRACKING is enabled on both. */
interface Reader {
  client: Redis;
  lean: LeanCompanion;
}

type Mode =
  | {
      kind: "standalone";
      source: RedisSource;
      watcher: ReplicationWatcher;
      unsubscribe: () => void;
      tracking: ClientTracking | null;
    }
  | { kind: "cluster"; cluster: RedisClusterSource };

/** One configured node, whichever it turns out to be: a standalone node (master or replica) or a cluster's seed. */
class RedisTargetSource implements WatchedSource {
  private readonly client: Redis;
  private readonly node: RedisNodePort;
  private mode: Mode | null = null;
  private error = "not connected yet";
  private closed = false;

  constructor(
    private readonly target: RedisTarget,
    private readonly opts: RedisSourcesOptions,
  ) {
    this.client = connectRedis({
      url: target.url,
      commandTimeoutMs: opts.commandTimeoutMs,
      onStatus: (up, error) => {
        if (this.mode?.kind === "standalone") this.mode.source.setConnection(up, error);
        else if (!up) this.error = error ?? "down";
      },
    });
    this.node = new IoredisNodePort(this.client);
  }

  /** The first connection attempt (a slow handshake is not an outage), then the mode if the node answers. */
  async start(): Promise<void> {
    await this.client.connect().catch(() => undefined);
    await this.detect();
  }

  status(): SourceStatus {
    if (this.mode?.kind === "cluster") return this.mode.cluster.status();
    if (this.mode?.kind === "standalone") {
      const s = this.mode.source.status();
      const nodes = this.mode.watcher.nodes({ up: s.up, ...(s.error ? { error: s.error } : {}) });
      return nodes ? { ...s, nodes } : s;
    }
    return { id: this.target.id, kind: "redis", up: false, error: this.error, locks: 0, agentId: this.opts.agentId };
  }

  statuses(): SourceStatus[] {
    return this.mode?.kind === "cluster" ? this.mode.cluster.statuses() : [this.status()];
  }

  async poll(): Promise<TrackerOutput> {
    if (!this.mode) await this.detect();
    if (!this.mode) return EMPTY;
    return this.mode.kind === "cluster" ? this.mode.cluster.poll() : this.mode.source.poll();
  }

  locks(): Lock[] {
    if (!this.mode) return [];
    return this.mode.kind === "cluster" ? this.mode.cluster.locks() : this.mode.source.tracker.locks();
  }

  has(lockId: string): boolean {
    if (!this.mode) return false;
    return this.mode.kind === "cluster" ? this.mode.cluster.has(lockId) : this.mode.source.tracker.has(lockId);
  }

  async release(cmd: ReleaseCommand): Promise<{ result: ReleaseResult; output: TrackerOutput }> {
    if (this.mode?.kind === "cluster") return this.mode.cluster.release(cmd);
    if (this.mode?.kind === "standalone") return this.mode.source.release(cmd, new IoredisReleasePort(this.client));
    return {
      result: { outcome: "nothing-to-do", message: "this agent no longer sees the lock", plan: [], perNode: [] },
      output: EMPTY,
    };
  }

  close(): void {
    this.closed = true;
    if (this.mode?.kind === "cluster") this.mode.cluster.close();
    if (this.mode?.kind === "standalone") {
      this.mode.watcher.close();
      this.mode.unsubscribe();
      this.mode.tracking?.close();
      this.mode.source.close();
    }
    this.client.disconnect();
  }

  /** INFO cluster decides, once: until the node answers, the target is reported down. */
  private async detect(): Promise<void> {
    if (this.mode || this.closed) return;
    let cluster: boolean;
    try {
      cluster = parseClusterEnabled(await this.node.info("cluster"));
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err);
      return;
    }
    if (cluster) {
      if (this.target.db !== 0) this.opts.log(`${this.target.id}: a cluster has only database 0; watching that`);
      this.mode = { kind: "cluster", cluster: this.buildCluster() };
      this.opts.log(`${this.target.id}: Redis Cluster; watching every master that serves slots`);
      return;
    }
    const watcher = this.watcher(
      this.target.url,
      nodeId(hostPortOf(this.target.url), this.target.url),
      this.node,
      false,
    );
    const lean = this.lean(this.client);
    const source = new RedisSource(new IoredisLockPort(this.client, lean), {
      ...this.sourceOptions(),
      sourceId: this.target.id,
      annotator: watcher,
    });
    source.setConnection(this.client.status === "ready", this.error);
    // One batcher for both announcers (keyspace notifications, tracking invalidations): a key named by both is
    // read once. Keys beyond its bound are not dropped silently in track mode: every known key is re-read once (a
    // new key dropped for it waits for the paced SCAN; the bound is the per-source lock cap).
    const batcher = new NotificationBatcher(
      async (keys) => this.opts.push(await source.refreshNotified(keys)),
      5,
      MAX_PENDING_NOTIFIED,
      () => source.resync(),
    );
    const notifications = this.subscribe(this.target.url, this.target.db, source, batcher);
    const tracking =
      this.opts.changeDetection === "track"
        ? this.track(source, batcher, this.target.url, { client: this.client, lean }, this.target.id)
        : null;
    if (!tracking) source.setChangeDetection("poll");
    this.mode = { kind: "standalone", source, watcher, unsubscribe: notifications.stop, tracking };
    await Promise.all([notifications.ready, tracking?.ready]);
  }

  /**
   * CLIENT TRACKING for one node (a standalone node or a cluster master) on its reading connection; its state
   * switches the source between track and poll, logged once per change.
   */
  private track(
    source: RedisSource,
    batcher: NotificationBatcher,
    url: string,
    reader: Reader,
    label: string,
  ): ClientTracking {
    return startTrackedReader({
      url,
      reader: reader.client,
      companion: reader.lean,
      prefixes: bcastPrefixes(this.opts.lockPatterns),
      commandTimeoutMs: this.opts.commandTimeoutMs,
      onKeys: (keys) => keys.forEach((k) => batcher.add(k)),
      onFlush: () => source.resync(),
      label,
      log: this.opts.log,
      onMode: (mode, note) => source.setChangeDetection(mode, note),
    });
  }

  /** The lean connection for a reader's bulk reads, tracked with it in track mode (lean-connection.ts). */
  private lean(client: Redis): LeanCompanion {
    return new LeanCompanion(client, {
      tracked: this.opts.changeDetection === "track",
      commandTimeoutMs: this.opts.commandTimeoutMs,
      log: this.opts.log,
    });
  }

  private sourceOptions() {
    return {
      agentId: this.opts.agentId,
      newId: this.opts.newId,
      lockPatterns: this.opts.lockPatterns,
      scanCount: this.opts.scanCount,
      ...(this.opts.scanStepUsec !== undefined ? { scanStepUsec: this.opts.scanStepUsec } : {}),
      visitBudgetPerPoll: this.opts.visitBudgetPerPoll,
      valuePreviewBytes: this.opts.valuePreviewBytes,
      maxHoldMs: this.opts.maxHoldMs,
      ...(this.opts.hazardMemoryMs !== undefined ? { hazardMemoryMs: this.opts.hazardMemoryMs } : {}),
      // Each node (each cluster master) has a budget of its own: the budget is a share of that server's core.
      serverTimeBudgetFraction: (this.opts.serverTimeBudgetPercent ?? 0) / 100,
      ...(this.opts.sweepMs !== undefined ? { sweepMs: this.opts.sweepMs } : {}),
      push: this.opts.push,
    };
  }

  private buildCluster(): RedisClusterSource {
    const { agentId, newId, ...source } = this.sourceOptions();
    // Cluster nodes keep keys in database 0 only; the seed's scheme and credentials apply to every node.
    const base = new URL(this.target.url);
    base.pathname = "/0";
    const baseUrl = base.toString();
    // Each master's reading connection, for CLIENT TRACKING on it (tracking belongs to a connection).
    const readers = new Map<string, Reader>();
    return new RedisClusterSource({
      seedId: this.target.id,
      seedNode: this.node,
      agentId,
      newId,
      log: this.opts.log,
      source,
      refreshMs: this.opts.clusterRefreshMs,
      sourceIdOf: (address) => `${nodeId(address, baseUrl)}/0`,
      nodeIdOf: (address) => nodeId(address, baseUrl),
      connect: (address, onStatus) => {
        const client = connectRedis({
          url: nodeUrl(address, baseUrl, this.opts.addressMap),
          commandTimeoutMs: this.opts.commandTimeoutMs,
          onStatus,
        });
        const reader = { client, lean: this.lean(client) };
        readers.set(address, reader);
        return {
          lock: new IoredisLockPort(client, reader.lean),
          node: new IoredisNodePort(client),
          release: new IoredisReleasePort(client),
          ready: client.connect().catch(() => undefined),
          close: () => {
            if (readers.get(address) === reader) readers.delete(address);
            client.disconnect();
          },
        };
      },
      watch: (address, node) =>
        this.watcher(nodeUrl(address, baseUrl, this.opts.addressMap), nodeId(address, baseUrl), node, true),
      // Per master, and again for the promoted replica after a failover: notifications and client tracking.
      subscribe: (address, src) => {
        const url = nodeUrl(address, baseUrl, this.opts.addressMap);
        const batcher = new NotificationBatcher(
          async (keys) => this.opts.push(await src.refreshNotified(keys)),
          5,
          MAX_PENDING_NOTIFIED,
          () => src.resync(),
        );
        const notifications = this.subscribe(url, 0, src, batcher);
        const reader = readers.get(address);
        const tracked = this.opts.changeDetection === "track" && reader !== undefined;
        // Poll until this node's own tracking is live: after a failover the source still had the old node's mode.
        src.setChangeDetection(
          "poll",
          tracked ? "client tracking not live on this node yet; polling meanwhile" : undefined,
        );
        const tracking = tracked ? this.track(src, batcher, url, reader, `${redact(url)} (cluster master)`) : null;
        return () => {
          notifications.stop();
          tracking?.close();
          batcher.close();
        };
      },
    });
  }

  /** Replicas are dialled with the watched node's scheme, credentials and database (REDIS_ADDRESS_MAP applied). */
  private watcher(url: string, id: string, node: RedisNodePort, cluster: boolean): ReplicationWatcher {
    return new ReplicationWatcher({
      nodeId: id,
      node,
      cluster,
      checkReplicas: this.opts.replicaCheck,
      replicaId: (address) => nodeId(address, url),
      connectReplica: (address) => {
        const client = connectRedis({
          url: nodeUrl(address, url, this.opts.addressMap),
          commandTimeoutMs: this.opts.commandTimeoutMs,
          onStatus: () => undefined, // each check reports the replica's state
        });
        return {
          port: new IoredisReplicaPort(client, cluster),
          ready: client.connect().catch(() => undefined),
          close: () => client.disconnect(),
        };
      },
    });
  }

  /**
   * Keyspace notifications for one node: changes show in milliseconds, the poll stays the source of truth.
   * `ready` settles once subscribed (or given up); `stop` ends them.
   */
  private subscribe(
    url: string,
    db: number,
    source: RedisSource,
    shared?: NotificationBatcher,
  ): { ready: Promise<void>; stop: () => void } {
    if (this.opts.keyspaceNotifications === "off") return { ready: Promise.resolve(), stop: () => shared?.close() };
    const batcher =
      shared ?? new NotificationBatcher(async (keys) => this.opts.push(await source.refreshNotified(keys)));
    let close: (() => void) | null = null;
    let stopped = false;
    const ready = subscribeKeyspace({
      url,
      db,
      patterns: this.opts.lockPatterns,
      mode: this.opts.keyspaceNotifications,
      onKey: (key) => batcher.add(key),
      log: this.opts.log,
    }).then((sub) => {
      if (!sub) return;
      this.opts.log(`${redact(url)}: keyspace notifications ${sub.state}`);
      if (stopped) sub.close();
      else close = () => sub.close();
    });
    const stop = () => {
      stopped = true;
      close?.();
      batcher.close();
    };
    return { ready, stop };
  }
}

function hostPortOf(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "6379"}`;
}

/** scheme://host:port/db, without credentials: how nodes appear in the log. */
function redact(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}/${u.pathname.replace(/^\//, "") || "0"}`;
}
