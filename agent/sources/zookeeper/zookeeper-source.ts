/**
 * Watches the locks of one ZooKeeper ensemble. I/O only: recipes.ts, queue.ts, zk-hazards.ts and
 * four-letter-words.ts decide what the answers mean.
 *
 * Reads are driven by child watches on every lock parent (a fired watch marks the parent dirty, re-armed by the
 * re-read) plus a full resync every ZK_RESYNC_MS, after every reconnect and after the agent's own session expired
 * (watches die with it). A lock counts as released only when a read says so (no node, or no contender left): while
 * disconnected, or when a poll fails, nothing is released and the source is reported down instead.
 */
import type { Hazard, Lock, SourceStatus } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import type { WatchedSource } from "../source-port";
import { lockId } from "../../core/lock-id";
import { LockTracker, mergeInto, type ObservedLock, type TrackerOutput } from "../../core/tracker";
import { NO_OUTPUT, runRelease, type ReleaseAdapter, type ReleaseRun } from "../../release/release-runner";
import {
  invertWchc,
  mergeWatchTables,
  parseCons,
  parseMntrWatchCount,
  parseWchs,
  parseWchc,
  parseWchp,
  stickyLastOps,
  toClientWatchTable,
  type FourLetterResult,
} from "./four-letter-words";
import {
  DEFAULT_VIEW_OPTIONS,
  planCuratorSemaphore,
  planKazooSemaphore,
  planQueue,
  planSimple,
  holdingFingerprint,
  toObservedLock,
  type ClientWatchTable,
  type Contender,
  type LockShape,
  type NodeSample,
} from "./queue";
import {
  confirmCuratorSemaphore,
  isKazooSemaphoreHolderName,
  KAZOO_SEMAPHORE_QUEUE_SUFFIX,
  looksLikeSimpleLockName,
  parseKazooMaxLeases,
  recogniseChild,
  recogniseParent,
} from "./recipes";
import { TcpFourLetterWords, NodeZkPort } from "./zk-client";
import type { ZookeeperConfig, ZkServerAddress } from "./zk-config";
import {
  DEFAULT_THRESHOLDS,
  emptyParentsHazard,
  stuckCandidates,
  zkHazards,
  type HazardThresholds,
} from "./zk-hazards";
import type { FourLetterWordPort, ZkConnectionState, ZkDeleteResult, ZkPort, ZkStat } from "./zk-port";
import { decideZkRelease, releaseHolder, shownName } from "./zk-release";

/** A release's fresh read: the holder's contender and its Stat, or nulls when gone. */
interface ZkReading {
  holder: Contender | null;
  holderStat: ZkStat | null;
}

/** The one conditional delete: the holder's node at the version just read. */
interface ZkPlan {
  path: string;
  version: number;
  holder: Contender;
}

type TargetKind = "queue" | "curator-semaphore-v2" | "kazoo-semaphore" | "simple";

interface Target {
  path: string;
  kind: TargetKind;
  /** Configured in ZK_LOCK_PATHS: kept and watched even while empty or missing. */
  explicit: boolean;
  dirty: boolean;
  /** How the pending change was noticed, for event details. */
  cause: "discovered" | "watch" | "resync";
  shape: LockShape | null;
  /** The shape last handed to the tracker, to describe what changed. */
  applied: LockShape | null;
  /** Sequential children already read: a sequential name is never reused under one incarnation of a parent. */
  cache: Map<string, NodeSample>;
  parentCzxid: string | null;
  /** Seen empty (or gone) since the last resync: dropped at the next one unless rediscovered. */
  emptySince: number | null;
  everRead: boolean;
}

export interface ZookeeperSourceOptions {
  sourceId: string;
  agentId: string;
  newId: () => string;
  log: (line: string) => void;
  chroot: string;
  servers: ZkServerAddress[];
  lockPaths: string[];
  discoveryMaxDepth: number;
  discoveryMaxNodes: number;
  resyncMs: number;
  thresholds?: Partial<HazardThresholds>;
  /** Called (at most once between two polls) when a watch fired: the agent may poll sooner. */
  onChange?: () => void;
  /** Bytes of each node's data kept for previews and recognition. */
  dataPreviewBytes?: number;
  /** Reads in flight at once per batch (children's data, discovery listings). */
  readConcurrency?: number;
  /** Four-letter words are read at most this often (they list every watch on the server: not free). */
  fourLetterMinIntervalMs?: number;
  /** Contenders listed per lock; the total is in holder.contenders. */
  maxShown?: number;
  now?: () => number;
}

const ZERO_SESSION = "0x0";

function joinPath(parent: string, name: string): string {
  return parent === "/" ? `/${name}` : `${parent}/${name}`;
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** Runs fn over items with at most `limit` in flight, results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  });
  await Promise.all(workers);
  return out;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class ZookeeperSource implements WatchedSource {
  readonly tracker: LockTracker;
  private readonly targets = new Map<string, Target>();
  /** Watched directory -> the targets it belongs to. */
  private readonly watchIndex = new Map<string, Set<string>>();
  /** Directories holding discovered lock parents: a new child there may be a new lock. */
  private readonly containers = new Map<string, { dirty: boolean; children: Set<string> }>();
  private readonly emptyByDir = new Map<string, number>();
  private readonly stuckSince = new Map<string, { since: number; reason: string }>();
  private readonly thresholds: HazardThresholds;
  private readonly now: () => number;
  private readonly previewBytes: number;
  private readonly concurrency: number;
  private readonly fourLetterMinIntervalMs: number;
  private table: ClientWatchTable | null = null;
  private tableReadAt = 0;
  private refusedServers = new Set<string>();
  private chain: Promise<unknown> = Promise.resolve();
  private connection: ZkConnectionState = "connecting";
  private session: string | null = null;
  private resyncedSession: string | null = null;
  private forceResync = true;
  private nextResyncAt = 0;
  private pollOk = false;
  private error: string | undefined = "not connected yet";
  private lastScanAt: string | undefined;
  private lastScanMs: number | undefined;
  private changeSignalled = false;
  private readonly connectedWaiters = new Set<() => void>();
  private discoveryTruncatedLogged = false;
  onChange: (() => void) | undefined;

  constructor(
    private readonly port: ZkPort,
    private readonly fourLetters: FourLetterWordPort,
    private readonly opts: ZookeeperSourceOptions,
  ) {
    this.tracker = new LockTracker({ agentId: opts.agentId, newId: opts.newId });
    this.thresholds = { ...DEFAULT_THRESHOLDS, ...opts.thresholds };
    this.now = opts.now ?? Date.now;
    this.previewBytes = opts.dataPreviewBytes ?? 256;
    this.concurrency = opts.readConcurrency ?? 64;
    this.fourLetterMinIntervalMs = opts.fourLetterMinIntervalMs ?? 2000;
    this.onChange = opts.onChange;
    for (const p of opts.lockPaths) this.addTarget(p, "queue", true);
    port.setListener({
      onState: (state, session) => this.onState(state, session),
      onWatch: (path) => this.onWatch(path),
    });
  }

  status(): SourceStatus {
    const up = this.connection === "connected" && this.pollOk;
    const s: SourceStatus = {
      id: this.opts.sourceId,
      kind: "zookeeper",
      up,
      locks: this.tracker.size,
      agentId: this.opts.agentId,
    };
    if (!up) s.error = this.error ?? `zookeeper ${this.connection}`;
    if (this.lastScanAt) s.lastScanAt = this.lastScanAt;
    if (this.lastScanMs !== undefined) s.lastScanMs = this.lastScanMs;
    const hazards = this.sourceHazards();
    if (hazards.length > 0) s.hazards = hazards.slice(0, 64);
    return s;
  }

  locks() {
    return this.tracker.locks();
  }

  has(id: string): boolean {
    return this.tracker.has(id);
  }

  /** Hazards that belong to no single lock (empty lock parents piling up in a directory). */
  sourceHazards(): Hazard[] {
    const out: Hazard[] = [];
    for (const [dir, n] of this.emptyByDir) {
      const h = emptyParentsHazard(dir, n, this.thresholds.emptyParentsMin);
      if (h) out.push(h);
    }
    return out;
  }

  /** Whether the current view comes from the server's own watch tables (four-letter words allowed). */
  get watchesObserved(): boolean {
    return this.table?.complete ?? false;
  }

  /** Resolves true once a session is established, false after timeoutMs. */
  whenConnected(timeoutMs: number): Promise<boolean> {
    if (this.connection === "connected") return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.connectedWaiters.delete(done);
        resolve(false);
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.connectedWaiters.add(done);
    });
  }

  private onState(state: ZkConnectionState, session: string | null): void {
    this.connection = state;
    if (state === "connected") {
      this.session = session;
      for (const f of [...this.connectedWaiters]) f();
      this.connectedWaiters.clear();
      return;
    }
    // Whatever happened while away is re-read in full once back; until then the locks stay as last seen.
    this.forceResync = true;
    this.pollOk = false;
    if (state === "disconnected") this.error = "disconnected from ZooKeeper; locks are shown as last seen";
    else if (state === "expired") this.error = "the agent's ZooKeeper session expired; reconnecting";
    else if (state === "auth-failed") this.error = "ZooKeeper authentication failed (check ZK_AUTH)";
    else if (state === "closed") this.error = "closed";
    this.opts.log(`zookeeper ${this.opts.sourceId}: ${state}`);
  }

  private onWatch(path: string): void {
    let hit = false;
    for (const t of this.watchIndex.get(path) ?? []) {
      const target = this.targets.get(t);
      if (target && !target.dirty) {
        target.dirty = true;
        target.cause = "watch";
      }
      hit = true;
    }
    const c = this.containers.get(path);
    if (c) {
      c.dirty = true;
      hit = true;
    }
    if (hit && !this.changeSignalled) {
      this.changeSignalled = true;
      this.onChange?.();
    }
  }

  private addTarget(path: string, kind: TargetKind, explicit: boolean): Target {
    const existing = this.targets.get(path);
    if (existing) {
      existing.emptySince = null;
      return existing;
    }
    const t: Target = {
      path,
      kind,
      explicit,
      dirty: true,
      cause: "discovered",
      shape: null,
      applied: null,
      cache: new Map(),
      parentCzxid: null,
      emptySince: null,
      everRead: false,
    };
    this.targets.set(path, t);
    this.indexWatches(t);
    return t;
  }

  private watchDirs(t: Target): string[] {
    if (t.kind === "curator-semaphore-v2") return [t.path, joinPath(t.path, "leases"), joinPath(t.path, "locks")];
    if (t.kind === "kazoo-semaphore") return [t.path, `${t.path}${KAZOO_SEMAPHORE_QUEUE_SUFFIX}`];
    return [t.path];
  }

  private indexWatches(t: Target): void {
    for (const dir of this.watchDirs(t)) {
      const set = this.watchIndex.get(dir) ?? new Set<string>();
      set.add(t.path);
      this.watchIndex.set(dir, set);
    }
  }

  private dropTarget(t: Target): void {
    this.targets.delete(t.path);
    for (const [dir, set] of this.watchIndex) {
      set.delete(t.path);
      if (set.size === 0) this.watchIndex.delete(dir);
    }
    for (const key of this.stuckSince.keys()) if (key.startsWith(`${t.path}/`)) this.stuckSince.delete(key);
  }

  /** One poll; polls never overlap (a poll asked for while one runs starts after it). Throws nothing. */
  poll(): Promise<TrackerOutput> {
    const run = this.chain.then(() => this.pollOnce());
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async pollOnce(): Promise<TrackerOutput> {
    const empty: TrackerOutput = { events: [], upserts: [], removed: [] };
    this.changeSignalled = false;
    if (this.connection !== "connected") {
      this.pollOk = false;
      return empty;
    }
    try {
      const started = this.now();
      const full = this.forceResync || this.session !== this.resyncedSession || started >= this.nextResyncAt;
      if (full) await this.resync(started);
      await this.readContainers();
      const dirty = [...this.targets.values()].filter((t) => t.dirty);
      await mapLimit(dirty, 8, (t) => this.readTarget(t, full));
      const anyLock = [...this.targets.values()].some((t) => t.shape !== null);
      if (full || (anyLock && started - this.tableReadAt >= this.fourLetterMinIntervalMs))
        await this.readWatchTable(full);
      const out = this.observeAll(this.now());
      if (full) {
        this.forceResync = false;
        this.resyncedSession = this.session;
        this.nextResyncAt = started + this.opts.resyncMs;
        this.lastScanAt = new Date(this.now()).toISOString();
        this.lastScanMs = this.now() - started;
      }
      this.pollOk = true;
      this.error = undefined;
      return out;
    } catch (err) {
      this.pollOk = false;
      this.error = `poll failed: ${errorText(err)}`;
      return empty;
    }
  }

  /** Full pass: rediscover lock parents, re-arm every watch, re-read every node. */
  private async resync(nowMs: number): Promise<void> {
    const discovered = await this.discover(this.opts.lockPaths.length > 0 ? this.opts.lockPaths : ["/"]);
    for (const [path, kind] of discovered) this.addTarget(path, kind, false);
    // Watches may have died with a session: re-arm every container's as well.
    for (const c of this.containers.values()) c.dirty = true;
    for (const t of [...this.targets.values()]) {
      // Gone or empty since the last resync and not found again: stop watching it (its release was already seen).
      if (!t.explicit && !discovered.has(t.path) && t.emptySince !== null && t.emptySince < nowMs) {
        this.dropTarget(t);
        continue;
      }
      t.dirty = true;
      t.cause = t.everRead ? "resync" : "discovered";
      t.cache.clear();
    }
  }

  /**
   * Breadth-first walk from the roots, bounded by depth and by nodes listed. A node whose children look like
   * contenders is a lock parent and is not walked into (10 000 contenders must not cost 10 000 listings).
   */
  private async discover(roots: readonly string[]): Promise<Map<string, TargetKind>> {
    const found = new Map<string, TargetKind>();
    this.emptyByDir.clear();
    const containerChildren = new Map<string, Set<string>>();
    let level: Array<{ path: string; siblings: readonly string[] }> = roots.map((r) => ({ path: r, siblings: [] }));
    let visited = 0;
    let truncated = false;
    for (let depth = 0; level.length > 0 && depth <= this.opts.discoveryMaxDepth; depth++) {
      if (visited + level.length > this.opts.discoveryMaxNodes) {
        level = level.slice(0, Math.max(0, this.opts.discoveryMaxNodes - visited));
        truncated = true;
      }
      visited += level.length;
      const listed = await mapLimit(level, this.concurrency, async (n) => ({
        ...n,
        res: await this.port.getChildren(n.path, false),
      }));
      const next: Array<{ path: string; siblings: readonly string[] }> = [];
      for (const { path, siblings, res } of listed) {
        if (!res || path === "/zookeeper") continue;
        const kind = await this.classify(path, res.children, res.stat, siblings);
        if (kind === "empty") {
          this.emptyByDir.set(dirname(path), (this.emptyByDir.get(dirname(path)) ?? 0) + 1);
          continue;
        }
        if (kind !== null) {
          const [lockPath, k] = kind;
          found.set(lockPath, k);
          const c = dirname(lockPath);
          if (!containerChildren.has(c)) containerChildren.set(c, new Set(siblings.length > 0 ? siblings : []));
          continue;
        }
        if (depth < this.opts.discoveryMaxDepth) {
          for (const child of res.children) next.push({ path: joinPath(path, child), siblings: res.children });
        } else if (res.children.length > 0) truncated = true;
      }
      level = next;
    }
    // Only directories that hold lock parents (or are named like it) count for the empty-parents hazard.
    for (const dir of [...this.emptyByDir.keys()]) {
      if (![...found.keys()].some((p) => dirname(p) === dir) && !/lock/i.test(dir)) this.emptyByDir.delete(dir);
    }
    // Watch the directories holding lock parents for newcomers, but never outside the configured roots: a watch on
    // the parent of an explicit lock path would discover locks nobody asked for.
    const inRoots = (dir: string) => roots.some((r) => r === "/" || dir === r || dir.startsWith(`${r}/`));
    for (const [dir, children] of containerChildren) {
      if (!inRoots(dir)) continue;
      const c = this.containers.get(dir);
      if (c) c.children = children;
      else this.containers.set(dir, { dirty: true, children });
    }
    if (truncated && !this.discoveryTruncatedLogged) {
      this.discoveryTruncatedLogged = true;
      this.opts.log(
        `zookeeper ${this.opts.sourceId}: discovery stopped at ${this.opts.discoveryMaxNodes} nodes / depth ${this.opts.discoveryMaxDepth}; set ZK_LOCK_PATHS to watch deeper lock parents`,
      );
    }
    return found;
  }

  /** What a listed node is: a lock ([path, kind]), an empty leaf ("empty"), or a directory to walk (null). */
  private async classify(
    path: string,
    children: string[],
    stat: ZkStat,
    siblings: readonly string[],
  ): Promise<[string, TargetKind] | "empty" | null> {
    const name = basename(path);
    if (stat.ephemeralOwner !== ZERO_SESSION) return looksLikeSimpleLockName(name) ? [path, "simple"] : null;
    if (children.length === 0) return "empty";
    const shape = recogniseParent(name, children, siblings);
    if (shape.shape === "curator-semaphore-v2-candidate")
      return (await this.isCuratorSemaphore(path, children)) ? [path, "curator-semaphore-v2"] : null;
    if (shape.shape === "kazoo-semaphore") return [path, "kazoo-semaphore"];
    if (shape.shape !== "queue") return null;
    if (name.endsWith(KAZOO_SEMAPHORE_QUEUE_SUFFIX)) {
      const base = name.slice(0, -KAZOO_SEMAPHORE_QUEUE_SUFFIX.length);
      if (base !== "" && siblings.includes(base)) return [joinPath(dirname(path), base), "kazoo-semaphore"];
    }
    if (shape.recipe === "generic-sequential") {
      // Unknown names: only ephemeral sequential children make a lock (persistent ones are queues, change logs).
      const sample = children.filter((c) => recogniseChild(c) !== null).slice(0, 3);
      const stats = await Promise.all(sample.map((c) => this.port.exists(joinPath(path, c), false)));
      if (!stats.some((s) => s !== null && s.ephemeralOwner !== ZERO_SESSION)) return null;
    }
    return [path, "queue"];
  }

  private async isCuratorSemaphore(path: string, children: readonly string[]): Promise<boolean> {
    if (!children.every((c) => c === "leases" || c === "locks")) return false;
    const leases = children.includes("leases") ? await this.port.getChildren(joinPath(path, "leases"), false) : null;
    return confirmCuratorSemaphore(children, leases?.children ?? null);
  }

  /** New children of a directory holding lock parents may be new locks: look at them without a full resync. */
  private async readContainers(): Promise<void> {
    for (const [dir, c] of this.containers) {
      if (!c.dirty) continue;
      c.dirty = false; // before the read, as in readTarget: a watch firing during it is not lost
      let res: Awaited<ReturnType<ZkPort["getChildren"]>>;
      try {
        res = await this.port.getChildren(dir, true);
      } catch (err) {
        c.dirty = true;
        throw err;
      }
      if (!res) {
        this.containers.delete(dir);
        continue;
      }
      const fresh = res.children.filter((n) => !c.children.has(n) && !this.targets.has(joinPath(dir, n)));
      c.children = new Set(res.children);
      const listed = await mapLimit(fresh, this.concurrency, async (n) => ({
        path: joinPath(dir, n),
        res: await this.port.getChildren(joinPath(dir, n), false),
      }));
      for (const { path, res: r } of listed) {
        if (!r) continue;
        const kind = await this.classify(path, r.children, r.stat, res.children);
        if (Array.isArray(kind)) this.addTarget(kind[0], kind[1], false);
      }
    }
  }

  /** Reads one lock path (re-arming its watches) into target.shape; a failure leaves it dirty for the next poll. */
  private async readTarget(t: Target, full: boolean): Promise<void> {
    // Cleared before the read: a watch the read itself re-armed can fire before it ends (a contender queued a
    // moment later), and that change must leave the target dirty for the next poll, not be lost until a resync.
    t.dirty = false;
    let shape: LockShape | null;
    try {
      shape = await this.readShape(t, full);
    } catch (err) {
      t.dirty = true;
      throw err;
    }
    t.shape = shape;
    t.everRead = true;
    if (shape === null) t.emptySince ??= this.now();
    else t.emptySince = null;
  }

  private async readShape(t: Target, full: boolean): Promise<LockShape | null> {
    if (t.kind === "simple") return this.readSimple(t);
    const res = await this.port.getChildren(t.path, true);
    if (!res) {
      // A configured path that does not exist yet: an exists watch wakes us when it is created.
      if (t.explicit) await this.port.exists(t.path, true);
      t.cache.clear();
      return null;
    }
    if (res.stat.ephemeralOwner !== ZERO_SESSION) {
      this.retarget(t, "simple");
      return this.readSimple(t);
    }
    if (res.stat.czxid !== t.parentCzxid) {
      t.cache.clear();
      t.parentCzxid = res.stat.czxid;
    }
    const children = res.children;
    let kind: TargetKind = t.kind;
    if (
      t.kind === "curator-semaphore-v2" ||
      (t.explicit && children.length > 0 && (await this.isCuratorSemaphore(t.path, children)))
    )
      kind = "curator-semaphore-v2";
    else if (
      t.kind === "kazoo-semaphore" ||
      (t.explicit &&
        children.every(isKazooSemaphoreHolderName) &&
        (await this.port.exists(`${t.path}${KAZOO_SEMAPHORE_QUEUE_SUFFIX}`, false)) !== null)
    )
      kind = "kazoo-semaphore";
    else kind = "queue";
    this.retarget(t, kind);

    if (kind === "queue") {
      const nodes = await this.readChildren(t, t.path, children, full);
      return planQueue(t.path, nodes);
    }
    if (kind === "curator-semaphore-v2") {
      const leasesDir = joinPath(t.path, "leases");
      const locksDir = joinPath(t.path, "locks");
      const [leases, locks] = await Promise.all([
        this.port.getChildren(leasesDir, true),
        this.port.getChildren(locksDir, true),
      ]);
      const [l, k] = await Promise.all([
        this.readChildren(t, leasesDir, leases?.children ?? [], full),
        this.readChildren(t, locksDir, locks?.children ?? [], full),
      ]);
      // Curator keeps max leases in the client (or a SharedCount elsewhere): unknown here.
      return planCuratorSemaphore(t.path, l, k, null);
    }
    const queueDir = `${t.path}${KAZOO_SEMAPHORE_QUEUE_SUFFIX}`;
    const [own, queue] = await Promise.all([this.port.getData(t.path, 32), this.port.getChildren(queueDir, true)]);
    const holders = await this.readChildren(t, t.path, children.filter(isKazooSemaphoreHolderName), full, false);
    const waiting = await this.readChildren(t, queueDir, queue?.children ?? [], full);
    return planKazooSemaphore(t.path, holders, waiting, parseKazooMaxLeases(own?.data ?? null));
  }

  private retarget(t: Target, kind: TargetKind): void {
    if (t.kind === kind) return;
    for (const set of this.watchIndex.values()) set.delete(t.path);
    t.kind = kind;
    this.indexWatches(t);
  }

  private async readSimple(t: Target): Promise<LockShape | null> {
    const stat = await this.port.exists(t.path, true);
    if (!stat || stat.ephemeralOwner === ZERO_SESSION) return null;
    const res = await this.port.getData(t.path, this.previewBytes);
    if (!res) return null;
    return planSimple(t.path, this.sample(basename(t.path), res.data, res.stat));
  }

  private sample(name: string, data: Buffer | null, stat: ZkStat): NodeSample {
    return {
      name,
      session: stat.ephemeralOwner,
      ctimeMs: stat.ctimeMs,
      czxid: stat.czxid,
      data,
      dataLength: stat.dataLength,
    };
  }

  /**
   * Data and Stat of the contenders under dir, in bounded concurrent batches, with no watch per child. Sequential
   * children already read are taken from the cache unless this is a full resync; a child deleted between the
   * listing and the read is simply left out.
   */
  private async readChildren(
    t: Target,
    dir: string,
    names: readonly string[],
    full: boolean,
    sequentialOnly = true,
  ): Promise<NodeSample[]> {
    const wanted = sequentialOnly ? names.filter((n) => recogniseChild(n) !== null) : [...names];
    const toRead = wanted.filter((n) => full || !t.cache.has(joinPath(dir, n)));
    const read = await mapLimit(toRead, this.concurrency, async (n) => {
      const res = await this.port.getData(joinPath(dir, n), this.previewBytes);
      return res ? this.sample(n, res.data, res.stat) : null;
    });
    read.forEach((s, i) => {
      const key = joinPath(dir, toRead[i]!);
      if (s && recogniseChild(s.name) !== null) t.cache.set(key, s);
      else t.cache.delete(key);
    });
    const present = new Set(wanted.map((n) => joinPath(dir, n)));
    for (const key of t.cache.keys()) if (dirname(key) === dir && !present.has(key)) t.cache.delete(key);
    const fresh = new Map(read.filter((s): s is NodeSample => s !== null).map((s) => [s.name, s]));
    const out: NodeSample[] = [];
    for (const n of wanted) {
      const s = fresh.get(n) ?? t.cache.get(joinPath(dir, n));
      if (s) out.push(s);
    }
    return out;
  }

  /** wchp (or wchc where only that is allowed) and cons from every server of the ensemble, merged. */
  private async readWatchTable(full: boolean): Promise<void> {
    const perServer = await Promise.all(
      this.opts.servers.map(async (server) => {
        const id = `${server.host}:${server.port}`;
        if (this.refusedServers.has(id) && !full) {
          const refused = {
            ok: false as const,
            reason: "not-whitelisted" as const,
            message: "four-letter words not allowed",
          };
          return { server: id, wchp: refused, cons: refused };
        }
        const [wchp, cons] = await Promise.all([this.readWatches(server), this.read4(server, "cons", parseCons)]);
        if (!wchp.ok && wchp.reason === "not-whitelisted") this.refusedServers.add(id);
        else if (wchp.ok) this.refusedServers.delete(id);
        if (!wchp.ok) return { server: id, wchp, cons };
        // Two small answers that count the child watches wchp cannot list (the herd's children watches).
        const [wchs, mntr] = await Promise.all([
          this.read4(server, "wchs", (text) => parseWchs(text)),
          this.read4(server, "mntr", (text) => parseMntrWatchCount(text)),
        ]);
        return { server: id, wchp, cons, wchs, mntr };
      }),
    );
    const merged = mergeWatchTables(perServer);
    if (!merged.complete && (this.table?.complete ?? true)) {
      this.opts.log(
        `zookeeper ${this.opts.sourceId}: watches are inferred (${merged.problems.slice(0, 2).join("; ")})`,
      );
    }
    if (this.table?.lastOps) merged.lastOps = stickyLastOps(this.table.lastOps, merged.lastOps);
    this.table = toClientWatchTable(merged, this.opts.chroot);
    this.tableReadAt = this.now();
    this.updateStuck();
  }

  private async readWatches(server: ZkServerAddress): Promise<FourLetterResult<Map<string, string[]>>> {
    const byPath = await this.read4(server, "wchp", parseWchp);
    if (byPath.ok || byPath.reason !== "not-whitelisted") return byPath;
    const bySession = await this.read4(server, "wchc", parseWchc);
    return bySession.ok ? { ok: true, value: invertWchc(bySession.value), skipped: bySession.skipped } : byPath;
  }

  private async read4<T>(
    server: ZkServerAddress,
    cmd: "wchp" | "wchc" | "cons" | "wchs" | "mntr",
    parse: (text: string, truncated: boolean) => FourLetterResult<T>,
  ): Promise<FourLetterResult<T>> {
    try {
      const { text, truncated } = await this.fourLetters.send(server, cmd);
      return parse(text, truncated);
    } catch (err) {
      return { ok: false, reason: "empty", message: errorText(err) };
    }
  }

  /** A waiter must look stuck in consecutive watch tables for a while before it is reported. */
  private updateStuck(): void {
    const now = this.now();
    const seen = new Set<string>();
    for (const t of this.targets.values()) {
      if (!t.shape) continue;
      for (const [path, reason] of stuckCandidates(t.shape, this.table)) {
        seen.add(path);
        const prev = this.stuckSince.get(path);
        if (!prev) this.stuckSince.set(path, { since: now, reason });
        else prev.reason = reason;
      }
    }
    for (const key of [...this.stuckSince.keys()]) if (!seen.has(key)) this.stuckSince.delete(key);
  }

  private observeAll(atMs: number): TrackerOutput {
    const out: TrackerOutput = { events: [], upserts: [], removed: [] };
    const stuck = this.stuckFor(atMs);
    for (const t of this.targets.values()) {
      const r = this.observeTarget(t, atMs, stuck);
      if (r) mergeInto(out, r);
    }
    return out;
  }

  /** How long each stuck candidate has looked stuck at atMs, with the reason. */
  private stuckFor(atMs: number): Map<string, { forMs: number; reason: string }> {
    const stuck = new Map<string, { forMs: number; reason: string }>();
    for (const [path, s] of this.stuckSince) stuck.set(path, { forMs: atMs - s.since, reason: s.reason });
    return stuck;
  }

  /** Hands one target's current shape to the tracker; `extra` overrides event details (a force-release). */
  private observeTarget(
    t: Target,
    atMs: number,
    stuck = this.stuckFor(atMs),
    extra: Record<string, string | number | boolean> = {},
  ): TrackerOutput | null {
    const ctx = { sourceId: this.opts.sourceId, agentId: this.opts.agentId, observedAtMs: atMs };
    const id = lockId("zookeeper", this.opts.sourceId, t.path);
    let r: TrackerOutput | null = null;
    if (t.shape) {
      const hazardInput: Parameters<typeof zkHazards>[0] = {
        shape: t.shape,
        table: this.table,
        nowMs: atMs,
        thresholds: this.thresholds,
        stuck,
      };
      const empties = this.emptyByDir.get(dirname(t.path));
      if (empties !== undefined) hazardInput.emptySiblings = empties;
      const lock: ObservedLock = toObservedLock(t.shape, this.table, zkHazards(hazardInput), ctx, {
        maxShown: this.opts.maxShown ?? DEFAULT_VIEW_OPTIONS.maxShown,
        longWaitMs: this.thresholds.longWaitMs,
      });
      r = this.tracker.apply([{ lock, observedAtMs: atMs }], [], { ...this.describeChange(t), ...extra });
    } else if (this.tracker.has(id)) {
      r = this.tracker.apply([], [{ id, atMs }], { ...this.describeChange(t), ...extra });
    }
    t.applied = t.shape;
    return r;
  }

  /**
   * Guarded force-release, on the operator's explicit request: re-reads the lock, deletes the holder's contender
   * node only while it is the node the operator saw and still at the version just read, and reports the result at
   * once through the tracker. Runs between polls, never during one.
   */
  release(cmd: ReleaseCommand): Promise<ReleaseRun> {
    const run = this.chain.then(() => this.releaseOnce(cmd));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async releaseOnce(cmd: ReleaseCommand): Promise<ReleaseRun> {
    const t = [...this.targets.values()].find((x) => lockId("zookeeper", this.opts.sourceId, x.path) === cmd.lockId);
    const reported = t ? (this.tracker.locks().find((l) => l.id === cmd.lockId) ?? null) : null;
    const stop = (outcome: ReleaseResult["outcome"], message: string): ReleaseRun => ({
      result: { outcome, message, plan: [], perNode: [] },
      output: NO_OUTPUT,
    });
    if (!t || !reported) return stop("nothing-to-do", "this agent no longer sees the lock: nothing to release");
    if (this.connection !== "connected")
      return stop("error", `not connected to ZooKeeper (${this.connection}): nothing deleted`);
    return runRelease(this.releaseAdapter(t, reported), cmd);
  }

  private releaseAdapter(t: Target, reported: Lock): ReleaseAdapter<ZkReading, ZkPlan> {
    let reread = false;
    return {
      where: this.opts.sourceId,
      read: async () => {
        // A fresh listing (cached sequential children are immutable but for their data) and a fresh Stat of the holder.
        await this.readTarget(t, false);
        const holder = releaseHolder(t.shape);
        const holderStat = holder ? await this.port.exists(holder.path, false) : null;
        return { holder, holderStat };
      },
      // Whatever is decided, the fresher read goes to the view now (an owner change shows at once).
      seen: () => this.observeTarget(t, this.now()),
      fingerprint: ({ holder, holderStat }) =>
        holder && holderStat
          ? (holdingFingerprint({ path: holder.path, session: holderStat.ephemeralOwner, czxid: holderStat.czxid }) ??
            null)
          : null,
      decide: (r, cmd) => {
        const d = decideZkRelease({
          cmd,
          sourceId: this.opts.sourceId,
          reported,
          shape: t.shape,
          holderStat: r.holderStat,
          table: this.table,
        });
        if (d.kind === "refuse") {
          const perNode = d.path === null ? [] : [{ node: d.path, outcome: d.outcome }];
          return { kind: "stop", outcome: d.outcome, message: d.message, steps: d.steps, perNode };
        }
        return { kind: "go", plan: { path: d.path, version: d.version, holder: r.holder! }, steps: d.steps };
      },
      dryRun: (_r, plan) => ({
        message: "nothing deleted",
        perNode: [{ node: plan.path, outcome: "dry-run" }],
      }),
      write: async (_r, plan) => {
        const deleted: ZkDeleteResult = await this.port.delete(plan.path, plan.version);
        const outcome: ReleaseResult["outcome"] =
          deleted === "deleted"
            ? "released"
            : deleted === "no-node"
              ? "nothing-to-do"
              : deleted === "bad-version"
                ? "refused-owner-changed"
                : "refused";
        return [
          outcome === "released"
            ? { node: plan.path, outcome, detail: `version ${plan.version}` }
            : { node: plan.path, outcome },
        ];
      },
      settle: async (perNode, _plan, cmd) => {
        // The outcome stands whatever this re-read does: if it fails, the target stays dirty for the next poll.
        reread = await this.readTarget(t, false).then(
          () => true,
          () => false,
        );
        if (!reread) return null;
        const extra: Record<string, string> =
          perNode[0]?.outcome === "released" ? { reason: "force-released", by: cmd.actor, via: "release" } : {};
        return this.observeTarget(t, this.now(), undefined, extra);
      },
      summarise: (perNode, plan, cmd) => {
        const name = shownName(plan.holder);
        const outcome = perNode[0]!.outcome;
        if (outcome === "released") {
          const next = reread ? releaseHolder(t.shape) : null;
          const after = !reread
            ? "the lock will be re-read at the next poll"
            : next
              ? `${shownName(next)} holds now`
              : "no one holds the lock now";
          return { outcome, message: `deleted ${name} as ${cmd.actor}; ${after}` };
        }
        if (outcome === "nothing-to-do") return { outcome, message: `${name} went before it could be deleted` };
        if (outcome === "refused-owner-changed")
          return {
            outcome,
            message: `${name} changed (its version is no longer ${plan.version}) since it was read: nothing deleted`,
          };
        return { outcome, message: `${name} has children now: nothing deleted` };
      },
    };
  }

  /**
   * ZooKeeper facts for the events of one lock: how the change was seen, why the holder went (its session gone,
   * when cons says so, or its node deleted by a live client), and how many waiters left without holding.
   */
  private describeChange(t: Target): Record<string, string | number | boolean> {
    const before = t.applied;
    const after = t.shape;
    const detail: Record<string, string | number | boolean> = {
      via: t.cause,
      recipe: (after ?? before)?.recipe ?? "unknown",
    };
    if (!before) return detail;
    const now = new Set((after?.contenders ?? []).map((c) => c.path));
    const prevHolder = before.contenders.find((c) => c.role === "holder");
    const newHolder = after?.contenders.find((c) => c.role === "holder");
    if (prevHolder && prevHolder.path !== newHolder?.path) {
      detail.previousSession = prevHolder.session;
      if (now.has(prevHolder.path)) detail.reason = "queue-reordered";
      else if (this.table?.sessionsComplete && !this.table.hosts.has(prevHolder.session))
        detail.reason = "session-gone";
      else detail.reason = "node-deleted";
      if (newHolder) {
        detail.newSession = newHolder.session;
        // How long the new holder queued (from its node's ctime): the wait-time distribution of the history view.
        if (newHolder.ctimeMs > 0) detail.waitedMs = Math.max(0, Date.now() - newHolder.ctimeMs);
      }
    }
    const left = before.contenders.filter((c) => c.role === "waiter" && !now.has(c.path)).length;
    if (left > 0) detail.waiterLeft = left;
    return detail;
  }
}

export interface ZookeeperSourceHandle extends WatchedSource {
  readonly sourceId: string;
  /** Set (or replace) the callback that a fired watch calls, at most once between polls. */
  setOnChange(fn: (() => void) | undefined): void;
  /** Resolves true once the first session is established, false after timeoutMs. */
  whenConnected(timeoutMs: number): Promise<boolean>;
  sourceHazards(): Hazard[];
  close(): Promise<void>;
  /** The underlying source, for tests and diagnostics. */
  readonly source: ZookeeperSource;
}

export interface ZookeeperFactoryDeps {
  agentId: string;
  newId: () => string;
  log: (line: string) => void;
  onChange?: () => void;
  /** Overrides for tests; production uses node-zookeeper-client and plain TCP. */
  port?: ZkPort & { start?: () => void };
  fourLetterWords?: FourLetterWordPort;
  fourLetterMinIntervalMs?: number;
  thresholds?: Partial<HazardThresholds>;
}

/**
 * Builds the ZooKeeper source for one ensemble and starts connecting. Wire with
 * `const zk = loadZookeeperConfig(env); if (zk) sources.push(createZookeeperSource(zk, { agentId, newId, log }))`.
 */
export function createZookeeperSource(config: ZookeeperConfig, deps: ZookeeperFactoryDeps): ZookeeperSourceHandle {
  const port =
    deps.port ??
    new NodeZkPort({
      connect: config.connect,
      auth: config.auth,
      sessionTimeoutMs: config.sessionTimeoutMs,
      requestTimeoutMs: config.requestTimeoutMs,
      log: deps.log,
    });
  const fourLetters =
    deps.fourLetterWords ??
    new TcpFourLetterWords({ timeoutMs: Math.min(config.requestTimeoutMs, 5000), maxBytes: 16 * 1024 * 1024 });
  const sourceOpts: ZookeeperSourceOptions = {
    sourceId: config.sourceId,
    agentId: deps.agentId,
    newId: deps.newId,
    log: deps.log,
    chroot: config.chroot,
    servers: config.servers,
    lockPaths: config.lockPaths,
    discoveryMaxDepth: config.discoveryMaxDepth,
    discoveryMaxNodes: config.discoveryMaxNodes,
    resyncMs: config.resyncMs,
    thresholds: { longWaitMs: config.longWaitMs, ...deps.thresholds },
  };
  if (deps.onChange) sourceOpts.onChange = deps.onChange;
  if (deps.fourLetterMinIntervalMs !== undefined) sourceOpts.fourLetterMinIntervalMs = deps.fourLetterMinIntervalMs;
  const source = new ZookeeperSource(port, fourLetters, sourceOpts);
  (port as { start?: () => void }).start?.();
  return {
    sourceId: config.sourceId,
    source,
    status: () => source.status(),
    poll: () => source.poll(),
    locks: () => source.locks(),
    has: (id) => source.has(id),
    release: (cmd) => source.release(cmd),
    sourceHazards: () => source.sourceHazards(),
    setOnChange: (fn) => {
      source.onChange = fn;
    },
    whenConnected: (timeoutMs) => source.whenConnected(timeoutMs),
    close: () => port.close(),
  };
}
