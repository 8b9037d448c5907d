/**
 * What the Redlock page shows, computed from the live locks and sources. Pure (no React), so the grid's rules are
 * tested without a browser; the components only lay it out.
 */
import type { Lock, NodeStatus, QuorumState, Severity, SourceStatus } from "@/lib/contract/lock";

export type NodeHealth = "up" | "slow" | "down";

/** A lock as received, with the browser's clock at receipt (as the live provider keeps it). */
export interface Received {
  lock: Lock;
  receivedAt: number;
}

/**
 * NodeStatus has no "slow": the agent reports a slow member as up with the reason in `error`
 * (agent/sources/redlock/redlock-node-status.ts).
 */
export function nodeHealth(n: Pick<NodeStatus, "up" | "error">): NodeHealth {
  if (!n.up) return "down";
  return n.error ? "slow" : "up";
}

/** `redis://127.0.0.1:6379/0` -> `127.0.0.1:6379`: the column header; the full id goes in the title. */
export function nodeLabel(id: string): string {
  const m = /^rediss?:\/\/([^/]+?)(?:\/(\d+))?$/.exec(id);
  if (!m) return id;
  return m[2] && m[2] !== "0" ? `${m[1]}/${m[2]}` : m[1]!;
}

export function shortToken(token: string | null, max = 10): string {
  if (token === null) return "—";
  return token.length > max ? `${token.slice(0, max - 1)}…` : token;
}

/** Skew below this fraction of the drift allowance is fine; at it, a warning; at the whole allowance, critical. */
export const SKEW_WARN_FRACTION = 0.5;

export interface SkewView {
  /** Largest difference between two members' clocks as measured, and the part of it that is certain. */
  skewMs: number;
  lowerBoundMs: number;
  ahead: string;
  behind: string;
  /** Smallest drift allowance among the group's held locks; null when no lock has a quorum to compare with. */
  allowanceMs: number | null;
  level: "ok" | "warning" | "critical";
}

/**
 * Skew across the members that report a clock offset. Each offset is off by up to half its TIME round trip, so
 * the certain skew subtracts both halves (as the agent's hazard does).
 */
export function skewView(nodes: readonly NodeStatus[], allowanceMs: number | null): SkewView | null {
  const known = nodes.filter((n) => n.up && n.clockOffsetMs !== undefined);
  if (known.length < 2) return null;
  let ahead = known[0]!;
  let behind = known[0]!;
  for (const n of known) {
    if (n.clockOffsetMs! > ahead.clockOffsetMs!) ahead = n;
    if (n.clockOffsetMs! < behind.clockOffsetMs!) behind = n;
  }
  const skewMs = ahead.clockOffsetMs! - behind.clockOffsetMs!;
  const lowerBoundMs = Math.max(0, skewMs - (ahead.latencyMs ?? 0) / 2 - (behind.latencyMs ?? 0) / 2);
  const ratio = allowanceMs && allowanceMs > 0 ? lowerBoundMs / allowanceMs : 0;
  return {
    skewMs,
    lowerBoundMs,
    ahead: ahead.id,
    behind: behind.id,
    allowanceMs,
    level: ratio >= 1 ? "critical" : ratio >= SKEW_WARN_FRACTION ? "warning" : "ok",
  };
}

/**
 * A held lock's drift allowance is what its validity leaves out of the quorum's TTL (both read at one instant), so
 * the page needs no copy of the client's formula. Null when the lock has no quorum or no expiry.
 */
export function driftAllowanceOf(lock: Lock): number | null {
  const v = lock.quorum?.validityMs;
  if (v === null || v === undefined || lock.ttlMs === null) return null;
  return Math.max(0, lock.ttlMs - v);
}

export interface NodeRow {
  id: string;
  label: string;
  health: NodeHealth;
  reason: string | null;
  latencyMs: number | null;
  clockOffsetMs: number | null;
}

export interface GroupView {
  /** agentId + group name: two agents may each watch a group called "default". */
  key: string;
  name: string;
  agentId: string;
  status: SourceStatus | null;
  /** Column order of the grid: the group's configuration order, then any node only a lock mentions. */
  nodeOrder: string[];
  nodes: NodeRow[];
  needed: number;
  skew: SkewView | null;
  rows: GridRow[];
}

export function quorumSize(n: number): number {
  return Math.floor(n / 2) + 1;
}

/** Every Redlock group in the live state: its members' health and one grid row per resource. */
export function redlockGroups(sources: readonly SourceStatus[], locks: Iterable<Received>, now: number): GroupView[] {
  const groups = new Map<string, { status: SourceStatus | null; name: string; agentId: string; locks: Received[] }>();
  for (const s of sources) {
    if (s.kind !== "redlock") continue;
    groups.set(`${s.agentId}/${s.id}`, { status: s, name: s.id, agentId: s.agentId, locks: [] });
  }
  for (const r of locks) {
    if (r.lock.backend !== "redlock") continue;
    const key = `${r.lock.agentId}/${r.lock.source}`;
    const g = groups.get(key) ?? { status: null, name: r.lock.source, agentId: r.lock.agentId, locks: [] };
    g.locks.push(r);
    groups.set(key, g);
  }
  return [...groups.entries()]
    .map(([key, g]) => {
      const members = g.status?.nodes ?? [];
      const nodeOrder = columnOrder(
        members.map((n) => n.id),
        g.locks.map((r) => r.lock),
      );
      const allowances = g.locks.map((r) => driftAllowanceOf(r.lock)).filter((a): a is number => a !== null);
      const rows = g.locks
        .map((r) => gridRow(r, nodeOrder, now))
        .sort((a, b) => SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] || a.resource.localeCompare(b.resource));
      return {
        key,
        name: g.name,
        agentId: g.agentId,
        status: g.status,
        nodeOrder,
        nodes: members.map((n) => ({
          id: n.id,
          label: nodeLabel(n.id),
          health: nodeHealth(n),
          reason: n.error ?? null,
          latencyMs: n.latencyMs ?? null,
          clockOffsetMs: n.clockOffsetMs ?? null,
        })),
        needed: quorumSize(nodeOrder.length),
        skew: skewView(members, allowances.length > 0 ? Math.min(...allowances) : null),
        rows,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name) || a.agentId.localeCompare(b.agentId));
}

export function columnOrder(configured: readonly string[], locks: readonly Lock[]): string[] {
  const order = [...configured];
  for (const l of locks) for (const n of l.quorum?.perNode ?? []) if (!order.includes(n.node)) order.push(n.node);
  return order;
}

export type VoteRole = "winner" | "rival" | "none";

export interface GridCell {
  node: string;
  /** The node's state when the lock was last evaluated. */
  health: NodeHealth;
  /** present / absent / unknown (the node did not answer: it may hold the key). */
  presence: "present" | "absent" | "unknown";
  token: string | null;
  tokenShort: string;
  vote: VoteRole;
  /** ms left now (counted down since receipt); null when absent or without expiry. */
  ttlMs: number | null;
  noExpiry: boolean;
  /** ttlMs as a fraction of the row's longest TTL at receipt, for the bar. */
  ttlFraction: number;
  error: string | null;
}

export interface TokenVotes {
  token: string;
  short: string;
  votes: number;
  winner: boolean;
}

export type RowSeverity = Severity | "none";

export interface GridRow {
  id: string;
  resource: string;
  owner: string | null;
  state: QuorumState;
  votes: number;
  nodes: number;
  needed: number;
  /** "3/5 held" */
  summary: string;
  /** Validity left now (counted down); null without a quorum. */
  validityMs: number | null;
  partial: boolean;
  severity: RowSeverity;
  hazards: Lock["hazards"];
  /** Votes per token, the winner first. */
  tokens: TokenVotes[];
  cells: GridCell[];
}

const SEVERITY_RANK: Record<RowSeverity, number> = { critical: 0, warning: 1, info: 2, none: 3 };

/** States that are a hazard by themselves, whatever hazards the agent attached. */
const STATE_SEVERITY: Record<QuorumState, RowSeverity> = {
  held: "none",
  "at-risk": "warning",
  minority: "warning",
  expired: "warning",
  split: "critical",
  "quorum-lost": "critical",
};

export function quorumSummary(q: { votes: number; nodes: number; state: QuorumState }): string {
  return `${q.votes}/${q.nodes} ${q.state}`;
}

/** One resource across the group's nodes, counted down to `now`. */
export function gridRow(r: Received, nodeOrder: readonly string[], now: number): GridRow {
  const { lock, receivedAt } = r;
  const q = lock.quorum;
  const elapsed = Math.max(0, now - receivedAt);
  const perNode = new Map((q?.perNode ?? []).map((n) => [n.node, n]));
  const longest = Math.max(0, ...(q?.perNode ?? []).map((n) => (n.present && n.ttlMs !== null ? n.ttlMs : 0)));
  const counts = new Map<string, number>();
  for (const n of q?.perNode ?? [])
    if (n.present && n.token !== null) counts.set(n.token, (counts.get(n.token) ?? 0) + 1);
  const tokens: TokenVotes[] = [...counts.entries()]
    .map(([token, votes]) => ({ token, short: shortToken(token), votes, winner: token === lock.owner }))
    .sort((a, b) => Number(b.winner) - Number(a.winner) || b.votes - a.votes || a.token.localeCompare(b.token));

  const cells = nodeOrder.map((node): GridCell => {
    const n = perNode.get(node);
    if (!n) {
      return {
        node,
        health: "down",
        presence: "unknown",
        token: null,
        tokenShort: "—",
        vote: "none",
        ttlMs: null,
        noExpiry: false,
        ttlFraction: 0,
        error: "not in this lock's view",
      };
    }
    // A node that did not answer carries the reason; its key is unknown rather than absent.
    const silent = !n.present && (n.error !== undefined || n.state === "down");
    const ttl = n.present && n.ttlMs !== null ? Math.max(0, n.ttlMs - elapsed) : null;
    return {
      node,
      health: n.state,
      presence: n.present ? "present" : silent ? "unknown" : "absent",
      token: n.token,
      tokenShort: shortToken(n.token),
      vote: !n.present || n.token === null ? "none" : n.token === lock.owner ? "winner" : "rival",
      ttlMs: ttl,
      noExpiry: n.present && n.ttlMs === null,
      ttlFraction: ttl === null || longest === 0 ? (n.present && n.ttlMs === null ? 1 : 0) : Math.min(1, ttl / longest),
      error: n.error ?? null,
    };
  });

  const state = q?.state ?? "held";
  const worstHazard = lock.hazards.reduce<RowSeverity>(
    (w, h) => (SEVERITY_RANK[h.severity] < SEVERITY_RANK[w] ? h.severity : w),
    "none",
  );
  const fromState = STATE_SEVERITY[state];
  const severity = SEVERITY_RANK[fromState] < SEVERITY_RANK[worstHazard] ? fromState : worstHazard;
  return {
    id: lock.id,
    resource: lock.resource,
    owner: lock.owner,
    state,
    votes: q?.votes ?? 0,
    nodes: q?.nodes ?? nodeOrder.length,
    needed: q?.needed ?? quorumSize(nodeOrder.length),
    summary: q ? quorumSummary(q) : "no quorum view",
    validityMs: q?.validityMs === null || q?.validityMs === undefined ? null : Math.max(0, q.validityMs - elapsed),
    partial: q?.partial ?? false,
    severity,
    hazards: lock.hazards,
    tokens,
    cells,
  };
}
