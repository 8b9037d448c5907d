import { describe, expect, it } from "vitest";
import {
  driftAllowanceMs,
  evaluateQuorum,
  quorumSize,
  type NodeAnswer,
  type QuorumInput,
} from "../../agent/sources/redlock/redlock-quorum";
import type { QuorumState } from "../../lib/contract/lock";

const NOW = 1_800_000_000_000;
const A = "0123456789abcdef0123456789abcdef";
const B = "fedcba9876543210fedcba9876543210";

/** A node that answered: `held` is [token, pttl] or null for absent. */
function up(i: number, held: [string, number | null] | null, extra: Partial<NodeAnswer> = {}): NodeAnswer {
  return {
    node: `n${i}`,
    state: "up",
    answered: true,
    present: held !== null,
    token: held?.[0] ?? null,
    pttlMs: held?.[1] ?? null,
    readAtMs: NOW,
    latencyMs: 0.4,
    ...extra,
  };
}

function silent(i: number, state: "down" | "slow" = "down"): NodeAnswer {
  return {
    node: `n${i}`,
    state,
    answered: false,
    present: false,
    token: null,
    pttlMs: null,
    readAtMs: NOW,
    error: "connect ECONNREFUSED",
  };
}

/** Five nodes from a compact spec: "A" = token A with `ttl`, "B" = token B, "-" = absent, "x" = down. */
function five(spec: string, ttl = 10_000): NodeAnswer[] {
  return [...spec].map((c, i) => {
    if (c === "x") return silent(i);
    if (c === "-") return up(i, null);
    return up(i, [c === "A" ? A : B, ttl]);
  });
}

function run(answers: NodeAnswer[], extra: Partial<QuorumInput> = {}) {
  return evaluateQuorum({ group: "g", nowMs: NOW, answers, ...extra });
}

describe("quorum size and drift allowance", () => {
  it.each([
    [3, 2],
    [4, 3],
    [5, 3],
    [6, 4],
    [7, 4],
  ])("N=%i needs %i", (n, needed) => expect(quorumSize(n)).toBe(needed));

  it.each([
    [10_000, 102],
    [30_000, 302],
    [1_000, 12],
    [50, 3], // Math.round(0.5) = 1, as node-redlock computes it
    [0, 2],
  ])("lease %i ms allows %i ms of drift", (lease, drift) => expect(driftAllowanceMs(lease)).toBe(drift));
});

describe("evaluateQuorum states", () => {
  const cases: Array<{
    name: string;
    answers: NodeAnswer[];
    input?: Partial<QuorumInput>;
    state: QuorumState;
    votes: number;
    owner: string | null;
    hazards: string[];
    partial?: boolean;
  }> = [
    { name: "held on all five", answers: five("AAAAA"), state: "held", votes: 5, owner: A, hazards: [] },
    { name: "held on four: one spare", answers: five("AAAA-"), state: "held", votes: 4, owner: A, hazards: [] },
    {
      name: "at-risk: bare majority",
      answers: five("AAA--"),
      state: "at-risk",
      votes: 3,
      owner: A,
      hazards: ["redlock-at-risk"],
    },
    {
      name: "at-risk: spares expire before the validity ends (extend reached three nodes)",
      answers: [up(0, [A, 30_000]), up(1, [A, 30_000]), up(2, [A, 30_000]), up(3, [A, 400]), up(4, [A, 400])],
      state: "at-risk",
      votes: 5,
      owner: A,
      hazards: ["redlock-at-risk"],
    },
    {
      name: "at-risk while nodes are down, view partial",
      answers: five("AAAxx"),
      state: "at-risk",
      votes: 3,
      owner: A,
      hazards: ["redlock-at-risk", "redlock-node-down"],
      partial: true,
    },
    {
      name: "held with one node down, view partial",
      answers: five("AAAAx"),
      state: "held",
      votes: 4,
      owner: A,
      hazards: ["redlock-node-down"],
      partial: true,
    },
    {
      name: "minority leftover: failed acquire on two nodes",
      answers: five("AA---"),
      state: "minority",
      votes: 2,
      owner: A,
      hazards: ["redlock-minority"],
    },
    {
      name: "split: two tokens, neither with quorum",
      answers: five("AABB-"),
      state: "split",
      votes: 2,
      owner: A,
      hazards: ["redlock-split"],
    },
    {
      name: "split with a down node, prior owner wins the tie",
      answers: five("AABBx"),
      input: { previousToken: B },
      state: "split",
      votes: 2,
      owner: B,
      hazards: ["redlock-split", "redlock-node-down"],
      partial: true,
    },
    {
      name: "held with a rival leftover",
      answers: five("AAAAB"),
      state: "held",
      votes: 4,
      owner: A,
      hazards: ["redlock-minority"],
    },
    {
      name: "quorum-lost: nodes went down while the lock was valid",
      answers: five("AAxxx"),
      input: { prior: { token: A, validUntilMs: NOW + 9_000 } },
      state: "quorum-lost",
      votes: 2,
      owner: A,
      hazards: ["redlock-quorum-lost", "redlock-node-down"],
      partial: true,
    },
    {
      name: "quorum-lost: keys vanished early on three nodes",
      answers: five("AA---"),
      input: { prior: { token: A, validUntilMs: NOW + 9_000 } },
      state: "quorum-lost",
      votes: 2,
      owner: A,
      hazards: ["redlock-quorum-lost"],
    },
    {
      name: "quorum-lost and split: a rival took the nodes the holder lost",
      answers: five("AABB-"),
      input: { prior: { token: A, validUntilMs: NOW + 9_000 } },
      state: "quorum-lost",
      votes: 2,
      owner: A,
      hazards: ["redlock-quorum-lost", "redlock-split"],
    },
    {
      name: "quorum-lost: no answering node has it and only two answer",
      answers: [up(0, null), up(1, null), silent(2), silent(3), silent(4)],
      input: { prior: { token: A, validUntilMs: NOW + 9_000 } },
      state: "quorum-lost",
      votes: 0,
      owner: A,
      hazards: ["redlock-quorum-lost", "redlock-node-down"],
      partial: true,
    },
    {
      name: "expired: the quorum's PTTL is inside the drift allowance",
      answers: five("AAAAA", 50),
      input: { knownLeaseMs: new Map([[A, 10_000]]) },
      state: "expired",
      votes: 5,
      owner: A,
      hazards: ["redlock-expired"],
    },
    {
      name: "expired: lease over, the last keys vanish within the grace",
      answers: five("AA---", 30),
      input: { prior: { token: A, validUntilMs: NOW - 70 }, knownLeaseMs: new Map([[A, 10_000]]) },
      state: "expired",
      votes: 2,
      owner: A,
      hazards: ["redlock-expired"],
    },
    {
      name: "lease over but keys linger on a minority: residue",
      answers: five("AA---", 20_000),
      input: { prior: { token: A, validUntilMs: NOW - 70 } },
      state: "minority",
      votes: 2,
      owner: A,
      hazards: ["redlock-minority"],
    },
    {
      name: "a key already past its PTTL at evaluation time does not vote",
      answers: [...five("AA---"), up(5, [A, 100], { readAtMs: NOW - 200 }), up(6, null)],
      state: "minority",
      votes: 2,
      owner: A,
      hazards: ["redlock-minority"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = run(c.answers, c.input);
      expect(r.view.state).toBe(c.state);
      expect(r.view.votes).toBe(c.votes);
      expect(r.token).toBe(c.owner);
      expect(r.view.needed).toBe(quorumSize(c.answers.length));
      expect(r.view.partial).toBe(c.partial ?? false);
      expect(r.hazards.map((h) => h.code)).toEqual(c.hazards);
    });
  }
});

describe("evaluateQuorum validity and drift", () => {
  it("validity is the PTTL held by a majority less 1% of the lease plus 2 ms", () => {
    // Third-largest PTTL (the one a majority still has) is 9 000; lease known 10 000 -> drift 102.
    const answers = [up(0, [A, 9_900]), up(1, [A, 9_500]), up(2, [A, 9_000]), up(3, [A, 8_000]), up(4, null)];
    const r = run(answers, { knownLeaseMs: new Map([[A, 10_000]]) });
    expect(r.leaseMs).toBe(10_000);
    expect(r.driftMs).toBe(102);
    expect(r.view.validityMs).toBe(9_000 - 102);
    expect(r.validUntilMs).toBe(NOW + 9_000 - 102);
    expect(r.ttlMs).toBe(9_000);
    // The fourth node's key (8 000) expires before the validity ends (8 898): it is no spare, so at-risk.
    expect(r.view.state).toBe("at-risk");
  });

  it("a spare that outlives the validity keeps the lock held", () => {
    const answers = [up(0, [A, 9_900]), up(1, [A, 9_500]), up(2, [A, 9_000]), up(3, [A, 8_950]), up(4, null)];
    const r = run(answers, { knownLeaseMs: new Map([[A, 10_000]]) });
    expect(r.view.validityMs).toBe(8_898);
    expect(r.view.state).toBe("held");
  });

  it("without a known lease the longest PTTL now stands for it", () => {
    const r = run(five("AAAAA", 30_000));
    expect(r.leaseMs).toBe(30_000);
    expect(r.driftMs).toBe(302);
    expect(r.view.validityMs).toBe(29_698);
  });

  it("PTTLs read at different moments are compared at one instant", () => {
    // Node 0 answered 300 ms before evaluation: its 10 000 is 9 700 now.
    const answers = five("AAAAA", 10_000);
    answers[0] = up(0, [A, 10_000], { readAtMs: NOW - 300 });
    const r = run(answers);
    expect(r.view.perNode[0]!.ttlMs).toBe(9_700);
    expect(r.view.perNode[1]!.ttlMs).toBe(10_000);
  });

  it("keys without expiry: no TTL and no validity figure, still a quorum", () => {
    const r = run(five("AAAA-", 0).map((a) => (a.present ? { ...a, pttlMs: null } : a)));
    expect(r.view.state).toBe("held");
    expect(r.ttlMs).toBeNull();
    expect(r.view.validityMs).toBeNull();
  });

  it("per-node output marks silent nodes with their error and no key facts", () => {
    const r = run(five("AAAAx"));
    expect(r.view.perNode[4]).toEqual({
      node: "n4",
      state: "down",
      present: false,
      token: null,
      ttlMs: null,
      error: "connect ECONNREFUSED",
    });
    expect(r.view.perNode[0]).toMatchObject({
      node: "n0",
      state: "up",
      present: true,
      token: A,
      ttlMs: 10_000,
      latencyMs: 0.4,
    });
  });
});

describe("evaluateQuorum clock skew", () => {
  // 10 s lease -> drift allowance 102 ms; warning from 51 ms of certain skew, critical from 102 ms.
  const withOffsets = (offsets: number[], uncertainty = 0): NodeAnswer[] =>
    five("AAAAA").map((a, i) => ({ ...a, clockOffsetMs: offsets[i]!, clockUncertaintyMs: uncertainty }));

  it.each([
    { name: "clocks in step", offsets: [0, 1, -1, 0, 2], want: null },
    { name: "skew under half the allowance", offsets: [0, 0, 0, 0, 50], want: null },
    { name: "skew at half the allowance: warning", offsets: [0, 0, 0, 0, 51], want: "warning" },
    { name: "skew spread across two nodes", offsets: [-40, 0, 0, 0, 40], want: "warning" },
    { name: "skew beyond the allowance: critical", offsets: [0, 0, 0, 0, 150], want: "critical" },
  ])("$name", ({ offsets, want }) => {
    const r = run(withOffsets(offsets), { knownLeaseMs: new Map([[A, 10_000]]) });
    const h = r.hazards.find((x) => x.code === "redlock-clock-skew");
    expect(h?.severity ?? null).toBe(want);
  });

  it("round-trip uncertainty is taken off before warning", () => {
    // 60 ms apart but each estimate may be 10 ms off: only 40 ms is certain, under the 51 ms threshold.
    const r = run(withOffsets([0, 0, 0, 0, 60], 10), { knownLeaseMs: new Map([[A, 10_000]]) });
    expect(r.skew).toMatchObject({ skewMs: 60, lowerBoundMs: 40, ahead: "n4" });
    expect(r.hazards.map((h) => h.code)).not.toContain("redlock-clock-skew");
  });

  it("silent nodes do not count toward skew", () => {
    const answers = withOffsets([0, 0, 0, 0, 500]);
    answers[4] = { ...silent(4), clockOffsetMs: 500 };
    const r = run(answers, { knownLeaseMs: new Map([[A, 10_000]]) });
    expect(r.hazards.map((h) => h.code)).not.toContain("redlock-clock-skew");
  });

  it("the hazard message does not carry the measured figure, so it is stable between polls", () => {
    const a = run(withOffsets([0, 0, 0, 0, 70]), { knownLeaseMs: new Map([[A, 10_000]]) });
    const b = run(withOffsets([0, 0, 0, 0, 73]), { knownLeaseMs: new Map([[A, 10_000]]) });
    expect(a.hazards).toEqual(b.hazards);
  });
});

describe("evaluateQuorum winner", () => {
  it("most votes wins over the previous owner", () => {
    expect(run(five("ABBB-"), { previousToken: A }).token).toBe(B);
  });
  it("ties go to the prior holder, then the previous owner, then deterministically", () => {
    expect(run(five("AABB-"), { prior: { token: B, validUntilMs: NOW + 1 }, previousToken: A }).token).toBe(B);
    expect(run(five("AABB-"), { previousToken: B }).token).toBe(B);
    expect(run(five("BBAA-")).token).toBe(A);
  });
  it("nothing present and no prior: no owner", () => {
    const r = run(five("-----"));
    expect(r.token).toBeNull();
    expect(r.view.votes).toBe(0);
  });
  it("hostile tokens are compared as given (the source escapes them before)", () => {
    const evil = "\\x00\\u{202e}lock";
    const r = run([up(0, [evil, 5_000]), up(1, [evil, 5_000]), up(2, [evil, 5_000])]);
    expect(r.token).toBe(evil);
    expect(r.view.state).toBe("held");
  });
});
