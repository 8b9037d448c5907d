import type { Lock, SourceStatus } from "../contract/lock";
import type { AgentSnapshot, AgentUpdate, UiDelta, UiState } from "../contract/socket";

interface HeldLock {
  lock: Lock;
  /** Dashboard clock when the lock's ttlMs was current: TTLs are recomputed against this, not the agent's clock. */
  receivedAtMs: number;
}

interface AgentState {
  id: string;
  name: string;
  connected: boolean;
  lastSeenMs: number;
  locks: Map<string, HeldLock>;
  sources: SourceStatus[];
}

/**
 * The current lock state per agent, in memory. Snapshots replace an agent's state; updates patch it. TTLs are
 * re-based on the dashboard's clock on receipt, so clock skew between agent hosts never shows as a wrong countdown.
 */
export class LiveState {
  private readonly agents = new Map<string, AgentState>();

  constructor(private readonly now: () => number = Date.now) {}

  applySnapshot(s: AgentSnapshot): UiDelta {
    const prev = this.agents.get(s.agentId);
    const at = this.now();
    const locks = new Map(s.locks.map((l) => [l.id, { lock: l, receivedAtMs: at }]));
    const removed = prev ? [...prev.locks.keys()].filter((id) => !locks.has(id)) : [];
    this.agents.set(s.agentId, {
      id: s.agentId,
      name: s.agentName,
      connected: true,
      lastSeenMs: at,
      locks,
      sources: s.sources,
    });
    return this.delta(s.locks, removed);
  }

  applyUpdate(u: AgentUpdate): UiDelta {
    const at = this.now();
    let agent = this.agents.get(u.agentId);
    if (!agent) {
      agent = { id: u.agentId, name: u.agentId, connected: true, lastSeenMs: at, locks: new Map(), sources: [] };
      this.agents.set(u.agentId, agent);
    }
    agent.connected = true;
    agent.lastSeenMs = at;
    agent.sources = u.sources;
    for (const l of u.upserts) agent.locks.set(l.id, { lock: l, receivedAtMs: at });
    for (const id of u.removed) agent.locks.delete(id);
    return this.delta(u.upserts, u.removed);
  }

  /** The agent went away: its locks stay visible (last known), its sources are marked down. */
  disconnect(agentId: string): UiDelta | null {
    const agent = this.agents.get(agentId);
    if (!agent) return null;
    agent.connected = false;
    agent.sources = agent.sources.map((s) => ({ ...s, up: false, error: `agent ${agent.name} disconnected` }));
    return this.delta([], []);
  }

  locks(): Lock[] {
    const at = this.now();
    const out: Lock[] = [];
    for (const a of this.agents.values()) for (const h of a.locks.values()) out.push(this.current(h, at));
    return out;
  }

  lock(id: string): Lock | null {
    const at = this.now();
    for (const a of this.agents.values()) {
      const h = a.locks.get(id);
      if (h) return this.current(h, at);
    }
    return null;
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

  state(): UiState {
    return { generatedAt: new Date(this.now()).toISOString(), locks: this.locks(), sources: this.sources() };
  }

  private current(h: HeldLock, at: number): Lock {
    if (h.lock.ttlMs === null) return h.lock;
    return { ...h.lock, ttlMs: Math.max(0, h.lock.ttlMs - (at - h.receivedAtMs)) };
  }

  private delta(upserts: readonly Lock[], removed: readonly string[]): UiDelta {
    return {
      generatedAt: new Date(this.now()).toISOString(),
      upserts: [...upserts],
      removed: [...removed],
      sources: this.sources(),
    };
  }
}
