import { describe, expect, it } from "vitest";
import { sourcesFingerprint } from "../../agent/transport/dashboard-link";
import {
  driftAllowanceOf,
  gridRow,
  nodeHealth,
  nodeLabel,
  redlockGroups,
  skewView,
} from "../../components/redlock/redlock-model";
import type { Hazard, Lock, NodeStatus, QuorumNode, QuorumView, SourceStatus } from "../../lib/contract/lock";

const A = "0123456789abcdef0123456789abcdef";
const B = "fedcba9876543210fedcba9876543210";
const N = [0, 1, 2, 3, 4].map((i) => `redis://127.0.0.1:${7000 + i}/0`);

function node(i: number, over: Partial<QuorumNode> = {}): QuorumNode {
  return { node: N[i]!, state: "up", present: true, token: A, ttlMs: 10_000, ...over };
}

function lock(quorum: Partial<QuorumView>, over: Partial<Lock> = {}): Lock {
  return {
    id: "rl-1",
    backend: "redlock",
    source: "default",
    resource: "lock:orders",
    owner: A,
    library: "node-redlock",
    rule: "redlock-32-hex-token",
    ttlMs: 10_000,
    holder: null,
    waiters: [],
    since: "2026-01-01T00:00:00.000Z",
    observedAt: "2026-01-01T00:00:00.000Z",
    kind: "string",
    valuePreview: A,
    hazards: [],
    agentId: "agent-1",
    quorum: {
      group: "default",
      votes: 5,
      nodes: 5,
      needed: 3,
      state: "held",
      validityMs: 9_898,
      partial: false,
      perNode: [0, 1, 2, 3, 4].map((i) => node(i)),
      ...quorum,
    },
    ...over,
  };
}

const member = (i: number, over: Partial<NodeStatus> = {}): NodeStatus => ({
  id: N[i]!,
  role: "redlock-member",
  up: true,
  latencyMs: 0.4,
  clockOffsetMs: 0,
  ...over,
});

const source = (nodes: NodeStatus[], over: Partial<SourceStatus> = {}): SourceStatus => ({
  id: "default",
  kind: "redlock",
  up: true,
  locks: 1,
  agentId: "agent-1",
  nodes,
  ...over,
});

describe("gridRow", () => {
  it("a lock held on five nodes: every cell present with the winning token, TTLs counted down", () => {
    const row = gridRow({ lock: lock({}), receivedAt: 1000 }, N, 3000);
    expect(row).toMatchObject({
      state: "held",
      votes: 5,
      nodes: 5,
      needed: 3,
      summary: "5/5 held",
      validityMs: 7_898,
      partial: false,
      severity: "none",
    });
    expect(row.tokens).toEqual([{ token: A, short: "012345678…", votes: 5, winner: true }]);
    expect(row.cells.map((c) => [c.presence, c.vote, c.ttlMs, c.ttlFraction])).toEqual(
      Array(5).fill(["present", "winner", 8_000, 0.8]),
    );
  });

  it("a frozen node is unknown (not absent), the row partial; a rival token counts its own votes", () => {
    const row = gridRow(
      {
        lock: lock({
          votes: 3,
          state: "at-risk",
          partial: true,
          perNode: [
            node(0),
            node(1),
            node(2),
            node(3, { token: B }),
            node(4, { state: "slow", present: false, token: null, ttlMs: null, error: "no answer within 2000 ms" }),
          ],
        }),
        receivedAt: 0,
      },
      N,
      0,
    );
    expect(row.summary).toBe("3/5 at-risk");
    expect(row.partial).toBe(true);
    expect(row.severity).toBe("warning");
    expect(row.cells.map((c) => c.presence)).toEqual(["present", "present", "present", "present", "unknown"]);
    expect(row.cells.map((c) => c.vote)).toEqual(["winner", "winner", "winner", "rival", "none"]);
    expect(row.cells[4]).toMatchObject({ health: "slow", error: "no answer within 2000 ms", ttlMs: null });
    expect(row.tokens.map((t) => [t.votes, t.winner])).toEqual([
      [3, true],
      [1, false],
    ]);
  });

  it("an absent key on an answering node is absent; a node missing from the view is unknown", () => {
    const row = gridRow(
      {
        lock: lock({
          votes: 2,
          state: "minority",
          validityMs: null,
          perNode: [node(0), node(1), node(2, { present: false, token: null, ttlMs: null })],
        }),
        receivedAt: 0,
      },
      N.slice(0, 4),
      0,
    );
    expect(row.cells.map((c) => c.presence)).toEqual(["present", "present", "absent", "unknown"]);
    expect(row.validityMs).toBeNull();
  });

  it("states and hazards set the row's severity: the worse of the two", () => {
    const critical: Hazard = { code: "redlock-clock-skew", severity: "critical", message: "" };
    const sev = (q: Partial<QuorumView>, hazards: Hazard[] = []) =>
      gridRow({ lock: lock(q, { hazards }), receivedAt: 0 }, N, 0).severity;
    expect(sev({ state: "held" })).toBe("none");
    expect(sev({ state: "held" }, [critical])).toBe("critical");
    expect(sev({ state: "minority" })).toBe("warning");
    expect(sev({ state: "split" })).toBe("critical");
    expect(sev({ state: "quorum-lost" })).toBe("critical");
    expect(sev({ state: "expired" })).toBe("warning");
  });

  it("a key without expiry shows a full bar and no countdown; TTLs never go below zero", () => {
    const row = gridRow(
      { lock: lock({ perNode: [node(0, { ttlMs: null }), node(1, { ttlMs: 500 })] }), receivedAt: 0 },
      N.slice(0, 2),
      2_000,
    );
    expect(row.cells[0]).toMatchObject({ noExpiry: true, ttlMs: null, ttlFraction: 1 });
    expect(row.cells[1]).toMatchObject({ noExpiry: false, ttlMs: 0, ttlFraction: 0 });
  });
});

describe("node health and skew", () => {
  it("down when not up, slow when up with a reason", () => {
    expect(nodeHealth({ up: false, error: "ECONNREFUSED" })).toBe("down");
    expect(nodeHealth({ up: true, error: "no answer within 2000 ms" })).toBe("slow");
    expect(nodeHealth({ up: true })).toBe("up");
  });

  it("node labels drop the scheme and database 0", () => {
    expect(nodeLabel("redis://127.0.0.1:6379/0")).toBe("127.0.0.1:6379");
    expect(nodeLabel("rediss://cache-1:6380/2")).toBe("cache-1:6380/2");
    expect(nodeLabel("not a url")).toBe("not a url");
  });

  it("skew subtracts half of each round trip; levels against the drift allowance", () => {
    const nodes = [member(0, { clockOffsetMs: 0 }), member(1, { clockOffsetMs: 60, latencyMs: 2 }), member(2)];
    expect(skewView(nodes, 102)).toMatchObject({
      skewMs: 60,
      lowerBoundMs: 58.8,
      ahead: N[1],
      behind: N[0],
      level: "warning",
    });
    expect(skewView(nodes, 200)!.level).toBe("ok");
    expect(skewView(nodes, 50)!.level).toBe("critical");
    expect(skewView(nodes, null)!.level).toBe("ok");
    // Down nodes and nodes without a clock do not count; one clock is no skew.
    expect(
      skewView([member(0), member(1, { up: false, clockOffsetMs: 500 }), member(2, { clockOffsetMs: undefined })], 10),
    ).toBeNull();
  });

  it("a held lock's drift allowance is its quorum TTL less its validity", () => {
    expect(driftAllowanceOf(lock({ validityMs: 9_898 }))).toBe(102);
    expect(driftAllowanceOf(lock({ validityMs: null }))).toBeNull();
    expect(driftAllowanceOf(lock({}, { ttlMs: null }))).toBeNull();
  });
});

describe("redlockGroups", () => {
  it("one group per agent and name, columns in configuration order, rows worst first", () => {
    const ok = lock({}, { id: "ok", resource: "lock:a" });
    const lost = lock({ state: "quorum-lost", votes: 2, validityMs: null }, { id: "lost", resource: "lock:z" });
    const other = lock({ group: "default" }, { id: "other", agentId: "agent-2" });
    const groups = redlockGroups(
      [
        source([member(4), member(0), member(1, { up: false, error: "ECONNREFUSED" }), member(2), member(3)]),
        { id: "redis://x:1/0", kind: "redis", up: true, locks: 0, agentId: "agent-1" },
      ],
      [
        { lock: ok, receivedAt: 0 },
        { lock: lost, receivedAt: 0 },
        { lock: other, receivedAt: 0 },
      ],
      0,
    );
    expect(groups.map((g) => g.key)).toEqual(["agent-1/default", "agent-2/default"]);
    const [g] = groups;
    expect(g!.nodeOrder).toEqual([N[4], N[0], N[1], N[2], N[3]]);
    expect(g!.nodes.map((n) => n.health)).toEqual(["up", "up", "down", "up", "up"]);
    expect(g!.nodes[2]!.reason).toBe("ECONNREFUSED");
    expect(g!.needed).toBe(3);
    expect(g!.rows.map((r) => r.id)).toEqual(["lost", "ok"]);
    expect(g!.skew!.allowanceMs).toBe(102);
    // The second agent's group has no status yet: its columns come from the lock's own view.
    expect(groups[1]!.status).toBeNull();
    expect(groups[1]!.nodeOrder).toEqual(N);
  });

  it("a watched group without locks is still listed", () => {
    const [g] = redlockGroups([source([member(0), member(1), member(2)], { locks: 0 })], [], 0);
    expect(g).toMatchObject({ name: "default", rows: [], needed: 2 });
  });
});

describe("sourcesFingerprint (what makes the agent send its sources at once)", () => {
  it("ignores per-poll figures and changes with health", () => {
    const s = source([member(0), member(1)], { lastScanAt: "2026-01-01T00:00:00.000Z", lastScanMs: 3 });
    const moved = source([member(0, { latencyMs: 9, clockOffsetMs: 4 }), member(1)], {
      lastScanAt: "2026-01-01T00:00:01.000Z",
      lastScanMs: 5,
    });
    expect(sourcesFingerprint([moved])).toBe(sourcesFingerprint([s]));
    const slow = source([member(0, { error: "no answer within 2000 ms" }), member(1)]);
    expect(sourcesFingerprint([slow])).not.toBe(sourcesFingerprint([s]));
    expect(sourcesFingerprint([{ ...s, up: false }])).not.toBe(sourcesFingerprint([s]));
  });
});
