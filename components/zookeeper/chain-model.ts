/**
 * The wait chain of one ZooKeeper lock, as the view draws it: holders, then the head of the queue, each waiter with
 * whom it watches and whether that watch was read from the server or inferred from the recipe. Pure: no React, no
 * clock (wait times are counted where they are drawn).
 */
import type { Hazard, Lock, ZkContender, ZkWatcher } from "@/lib/contract/lock";
import { queueLength } from "../../lib/contract/lock-queue";

/**
 * How a waiter's wait is known. observed: its session is in the server's watch table on the node it waits for;
 * inferred: four-letter words were not allowed, so the recipe says it; missing: the table was read and has no such
 * watch (a stuck waiter when it lasts); children: it watches a directory's children, which wchp never lists.
 */
export type WatchKind = "observed" | "inferred" | "missing" | "children";

export type NodeFlag = "persistent" | "stuck" | "herd";

export interface ChainNode {
  node: string;
  sequence: number | null;
  session: string;
  host: string | null;
  ctimeMs: number;
  role: ZkContender["role"];
  mode: ZkContender["mode"];
  ephemeral: boolean;
  dataPreview: string | null;
  /** 1-based place in the queue as the agent listed it. */
  position: number;
  waitsFor: string | null;
  /** null for holders. */
  watch: WatchKind | null;
  /** The node it waits for is the one drawn just before it (a mutex); false when it skips (readers, semaphores). */
  waitsForPrevious: boolean;
  watchers: ZkWatcher[];
  flags: NodeFlag[];
}

export interface ChainModel {
  lockId: string;
  parent: string;
  source: string;
  recipe: string;
  library: string;
  watchesObserved: boolean;
  /** The agent's long-wait threshold, when it sent one. */
  longWaitMs: number | null;
  holders: ChainNode[];
  /** The head of the queue, in order. */
  waiters: ChainNode[];
  /** Every contender of the lock, including those the agent did not list. */
  totalContenders: number;
  /** Queue length: every waiter, including those not drawn. */
  totalWaiters: number;
  /** Waiters not drawn (beyond the head, or not sent by the agent at all). */
  hiddenWaiters: number;
  /** Listed by the agent but not drawn: "show more" can reveal these. */
  moreAvailable: number;
  hazards: Hazard[];
}

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

export { queueLength };

function watchOf(c: ZkContender, byName: ReadonlyMap<string, ZkContender>, observed: boolean): WatchKind | null {
  if (c.role === "holder") return null;
  const target = c.waitsFor === null ? undefined : byName.get(c.waitsFor);
  // Not a contender of this lock: the waiter watches a directory's children (zk-lock's herd, a semaphore's leases).
  if (!target) return c.waitsFor === null ? (observed ? "missing" : "inferred") : "children";
  const w = target.watchedBy.find((x) => x.session === c.session);
  if (w) return w.observed ? "observed" : "inferred";
  return observed ? "missing" : "inferred";
}

export interface ChainOptions {
  /** Waiters drawn from the head of the queue. */
  headSize: number;
}

export const DEFAULT_HEAD = 20;

export function buildChain(lock: Lock, opts: ChainOptions = { headSize: DEFAULT_HEAD }): ChainModel | null {
  const zk = lock.zookeeper;
  if (!zk) return null;
  const byName = new Map(zk.contenders.map((c) => [c.node, c]));
  const stuck = lock.hazards.some((h) => h.code === "stuck-waiter");
  const herd = lock.hazards.some((h) => h.code === "herd");
  const mostWatched = Math.max(0, ...zk.contenders.map((c) => c.watchedBy.length));

  const toNode = (c: ZkContender, i: number, previous: ZkContender | null): ChainNode => {
    const watch = watchOf(c, byName, zk.watchesObserved);
    const flags: NodeFlag[] = [];
    if (!c.ephemeral) flags.push("persistent");
    if (stuck && watch === "missing") flags.push("stuck");
    if (herd && mostWatched >= 2 && c.watchedBy.length === mostWatched) flags.push("herd");
    return {
      node: c.node,
      sequence: c.sequence,
      session: c.session,
      host: c.host ?? null,
      ctimeMs: Date.parse(c.ctime),
      role: c.role,
      mode: c.mode,
      ephemeral: c.ephemeral,
      dataPreview: c.dataPreview,
      position: i + 1,
      waitsFor: c.waitsFor,
      watch,
      waitsForPrevious: previous !== null && c.waitsFor === previous.node,
      watchers: c.watchedBy,
      flags,
    };
  };

  const holders: ChainNode[] = [];
  const waiters: ChainNode[] = [];
  let listedWaiters = 0;
  let previous: ZkContender | null = null;
  zk.contenders.forEach((c, i) => {
    if (c.role === "holder") holders.push(toNode(c, i, null));
    else {
      listedWaiters++;
      if (waiters.length < opts.headSize) waiters.push(toNode(c, i, previous));
    }
    previous = c;
  });
  const totalWaiters = queueLength(lock);
  return {
    lockId: lock.id,
    parent: lock.resource,
    source: lock.source,
    recipe: zk.recipe,
    library: lock.library,
    watchesObserved: zk.watchesObserved,
    longWaitMs: zk.longWaitMs ?? null,
    holders,
    waiters,
    totalContenders: num(lock.holder?.contenders) ?? zk.contenders.length,
    totalWaiters,
    hiddenWaiters: Math.max(0, totalWaiters - waiters.length),
    moreAvailable: listedWaiters - waiters.length,
    hazards: lock.hazards,
  };
}

const SEVERITY_RANK: Record<Hazard["severity"], number> = { critical: 0, warning: 1, info: 2 };

/** Parents with critical hazards first, then the longest queues, then by path. */
export function compareParents(a: Lock, b: Lock): number {
  const rank = (l: Lock) => Math.min(3, ...l.hazards.map((h) => SEVERITY_RANK[h.severity]));
  return (
    rank(a) - rank(b) ||
    queueLength(b) - queueLength(a) ||
    (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0)
  );
}

/** Whether a lock matches the filter text: path, source, or any listed contender's node, session or host. */
export function matchesFilter(lock: Lock, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  if (lock.resource.toLowerCase().includes(q) || lock.source.toLowerCase().includes(q)) return true;
  return (lock.zookeeper?.contenders ?? []).some((c) =>
    [c.node, c.session, c.host ?? ""].some((f) => f.toLowerCase().includes(q)),
  );
}

/** A waiter queued longer than the agent's threshold, counted against the browser's clock. */
export function isLongWait(
  node: Pick<ChainNode, "role" | "ctimeMs">,
  nowMs: number,
  longWaitMs: number | null,
): boolean {
  return node.role === "waiter" && longWaitMs !== null && nowMs - node.ctimeMs > longWaitMs;
}
