import type { Lock, SourceStatus } from "../contract/lock";
import type { AgentSnapshot, AgentUpdate } from "../contract/socket";
import { currentLock, indexLock, matches, type IndexedLock, type QueryResult } from "./lock-index";
import type { LockFilter, LockQuery } from "./lock-query";
import { LockOrder } from "./lock-order";

interface AgentState {
  id: string;
  name: string;
  connected: boolean;
  lastSeenMs: number;
  locks: Map<string, IndexedLock>;
  sources: SourceStatus[];
  /** While a snapshot arrives in parts: ids held before it that no part has re-sent yet. */
  pending: Set<string> | null;
}

/** What one message changed, for the view subscriptions: new and changed entries, and the entries that went. */
export interface LiveChange {
  upserts: IndexedLock[];
  removed: IndexedLock[];
}

/** The ids of the locks put or dropped since the last take: for a reader that re-reads only what changed. */
export interface ChangeFeed {
  take(): Set<string>;
  close(): void;
}

export type GroupBy = "pattern" | "source" | "library";

export interface LockGroup {
  /** The key pattern, source or library. */
  key: string;
  count: number;
  /** Locks of the group with at least one hazard, and how many carry each code. */
  withHazards: number;
  byHazard: Record<string, number>;
  byBackend: Record<string, number>;
  /** The longest current hold in the group, in ms as of the answer. */
  longestHoldMs: number;
}

/**
 * The current lock state per agent, in memory and indexed for queries. Snapshots replace an agent's state (in
 * parts, so a large one never arrives as one message); updates patch it. TTLs are re-based on the dashboard's
 * clock on receipt, so clock skew between agent hosts never shows as a wrong countdown.
 */
/** Quiet time after a message before the sorted orders still due are merged (LiveState.settle). */
const SETTLE_REST_MS = 50;

export class LiveState {
  private readonly agents = new Map<string, AgentState>();
  /** The sorted orders and counts of every entry, patched on each change below (put and drop). */
  private readonly order = new LockOrder((id) => this.entriesOf(id));
  /** The open change feeds: every put and drop adds the lock's id to each. */
  private readonly feeds = new Set<Set<string>>();

  /** A pass that merges the orders still due once messages pause (see settle). */
  private settleLater: NodeJS.Timeout | null = null;

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * After each message, one sorted order is merged (LockOrder.settle). The others still due are merged once messages
   * pause for SETTLE_REST_MS, one per turn of the event loop, so no query after a large snapshot pays their merge
   * and the loop is never held for more than one pass over the locks.
   */
  private settle(): void {
    if (this.order.settle() === null) return;
    if (this.settleLater) this.settleLater.refresh();
    else this.settleLater = setTimeout(() => this.settleRest(), SETTLE_REST_MS).unref();
  }

  private settleRest(): void {
    this.settleLater = null;
    if (this.order.settle() === null) return;
    setImmediate(() => {
      if (!this.settleLater) this.settleRest();
    }).unref();
  }

  private put(agent: AgentState, e: IndexedLock): void {
    const old = agent.locks.get(e.lock.id);
    if (old) this.order.remove(old);
    agent.locks.set(e.lock.id, e);
    this.order.add(e);
    for (const f of this.feeds) f.add(e.lock.id);
  }

  private drop(agent: AgentState, id: string): IndexedLock | undefined {
    const e = agent.locks.get(id);
    if (!e) return undefined;
    agent.locks.delete(id);
    this.order.remove(e);
    for (const f of this.feeds) f.add(id);
    return e;
  }

  /**
   * A feed of the ids of the locks put or dropped from now on (an update that changed nothing included), starting
   * with every lock held now. Bounded by the number of distinct ids, however long nobody takes from it.
   */
  trackChanges(): ChangeFeed {
    let ids = new Set<string>();
    for (const e of this.entries()) ids.add(e.lock.id);
    this.feeds.add(ids);
    return {
      take: () => {
        const taken = ids;
        this.feeds.delete(taken);
        ids = new Set();
        this.feeds.add(ids);
        return taken;
      },
      close: () => this.feeds.delete(ids),
    };
  }

  /** The entries of one lock id, one per agent reporting it, in the order the agents first connected. */
  entriesOf(id: string): IndexedLock[] {
    const found: IndexedLock[] = [];
    for (const a of this.agents.values()) {
      const e = a.locks.get(id);
      if (e) found.push(e);
    }
    return found;
  }

  /** The entries acquired before `sinceMs` (held longest first), from the kept order by hold time. */
  heldSince(sinceMs: number): IndexedLock[] {
    return this.order.heldSince(sinceMs);
  }

  /**
   * One snapshot, or one part of it: part 0 starts it, the last part drops what the snapshot did not re-send. The
   * locks of a part replace the old ones as they arrive, so the view never empties while a large snapshot streams.
   */
  applySnapshot(s: AgentSnapshot, receivedAtMs: number = this.now()): LiveChange {
    const at = receivedAtMs;
    const first = !s.part || s.part.index === 0;
    const last = !s.part || s.part.last;
    let agent = this.agents.get(s.agentId);
    if (!agent) {
      agent = this.newAgent(s.agentId, s.agentName, at);
      this.agents.set(s.agentId, agent);
    }
    agent.name = s.agentName;
    agent.connected = true;
    agent.lastSeenMs = at;
    agent.sources = s.sources;
    if (first) agent.pending = new Set(agent.locks.keys());
    const upserts: IndexedLock[] = [];
    for (const l of s.locks) {
      const e = indexLock(l, at, agent.locks.get(l.id)?.seq);
      this.put(agent, e);
      agent.pending?.delete(l.id);
      upserts.push(e);
    }
    const removed: IndexedLock[] = [];
    if (last && agent.pending) {
      for (const id of agent.pending) {
        const e = this.drop(agent, id);
        if (e) removed.push(e);
      }
      agent.pending = null;
    }
    this.settle();
    return { upserts, removed };
  }

  /** `receivedAtMs`: when the message arrived, before its events were stored (TTLs are re-based on it). */
  applyUpdate(u: AgentUpdate, receivedAtMs: number = this.now()): LiveChange {
    const at = receivedAtMs;
    let agent = this.agents.get(u.agentId);
    if (!agent) {
      agent = this.newAgent(u.agentId, u.agentId, at);
      this.agents.set(u.agentId, agent);
    }
    agent.connected = true;
    agent.lastSeenMs = at;
    agent.sources = u.sources;
    const upserts: IndexedLock[] = [];
    for (const l of u.upserts) {
      const e = indexLock(l, at, agent.locks.get(l.id)?.seq);
      this.put(agent, e);
      agent.pending?.delete(l.id);
      upserts.push(e);
    }
    const removed: IndexedLock[] = [];
    for (const id of u.removed) {
      const e = this.drop(agent, id);
      if (e) removed.push(e);
    }
    this.settle();
    return { upserts, removed };
  }

  /** The agent went away: its locks stay visible (last known), its sources are marked down. */
  disconnect(agentId: string): LiveChange | null {
    const agent = this.agents.get(agentId);
    if (!agent) return null;
    agent.connected = false;
    // A snapshot cut off half-way: keep what it did not re-send rather than guess.
    agent.pending = null;
    agent.sources = agent.sources.map((s) => ({ ...s, up: false, error: `agent ${agent.name} disconnected` }));
    return { upserts: [], removed: [] };
  }

  /** Every indexed lock (no copies): for queries and counters that walk them all. */
  *entries(): IterableIterator<IndexedLock> {
    for (const a of this.agents.values()) yield* a.locks.values();
  }

  /** Every lock as received (TTLs as of receipt, not now): for readers that ignore the TTL. */
  *rawLocks(): IterableIterator<Lock> {
    for (const e of this.entries()) yield e.lock;
  }

  get size(): number {
    let n = 0;
    for (const a of this.agents.values()) n += a.locks.size;
    return n;
  }

  /** Every lock with its TTL as of now. Copies each lock: prefer query() or entries() for large fleets. */
  locks(): Lock[] {
    const at = this.now();
    const out: Lock[] = [];
    for (const e of this.entries()) out.push(currentLock(e, at));
    return out;
  }

  /** The holder of a live lock, or null (gone, or held by no one): lock(id)'s owner without building the lock. */
  ownerOf(id: string): string | null {
    return this.entryOf(id)?.lock.owner ?? null;
  }

  lock(id: string): Lock | null {
    const e = this.entryOf(id);
    return e ? currentLock(e, this.now()) : null;
  }

  private entryOf(id: string): IndexedLock | undefined {
    for (const a of this.agents.values()) {
      const e = a.locks.get(id);
      if (e) return e;
    }
    return undefined;
  }

  /** One page of a query, from the kept sorted orders: the same answer as runQuery over every entry. */
  query(q: LockQuery): QueryResult {
    return this.order.query(q);
  }

  /** The fleet overview: locks grouped by key pattern, source or library, groups with hazards first. */
  groups(by: GroupBy, filter: LockFilter = {}): LockGroup[] {
    const at = this.now();
    const groups = new Map<string, LockGroup>();
    for (const e of this.entries()) {
      if (!matches(e, filter)) continue;
      const key = by === "pattern" ? e.pattern : by === "source" ? e.lock.source : e.lock.library;
      let g = groups.get(key);
      if (!g) {
        g = { key, count: 0, withHazards: 0, byHazard: {}, byBackend: {}, longestHoldMs: 0 };
        groups.set(key, g);
      }
      g.count++;
      g.byBackend[e.lock.backend] = (g.byBackend[e.lock.backend] ?? 0) + 1;
      if (e.lock.hazards.length > 0) {
        g.withHazards++;
        for (const code of new Set(e.lock.hazards.map((h) => h.code))) g.byHazard[code] = (g.byHazard[code] ?? 0) + 1;
      }
      g.longestHoldMs = Math.max(g.longestHoldMs, at - e.sinceMs);
    }
    return [...groups.values()].sort(
      (a, b) => b.withHazards - a.withHazards || b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
    );
  }

  sources(): SourceStatus[] {
    return [...this.agents.values()].flatMap((a) => a.sources);
  }

  agentList(): Array<{ id: string; name: string; connected: boolean; lastSeen: string }> {
    return [...this.agents.values()].map((a) => ({
      id: a.id,
      name: a.name,
      connected: a.connected,
      lastSeen: new Date(a.lastSeenMs).toISOString(),
    }));
  }

  private newAgent(id: string, name: string, at: number): AgentState {
    return { id, name, connected: true, lastSeenMs: at, locks: new Map(), sources: [], pending: null };
  }
}
