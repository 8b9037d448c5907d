import { describe, expect, it } from "vitest";
import type { ClusterNode, SlotRange } from "../../agent/sources/redis/cluster-nodes";
import { planTopology, watchedMasters, type MemberView } from "../../agent/sources/redis/cluster-topology";

const id = (c: string) => c.repeat(40);
const [A, B, C, D, E] = ["a", "b", "c", "d", "e"].map(id) as [string, string, string, string, string];
const FIRST: SlotRange[] = [{ start: 0, end: 5460 }];
const SECOND: SlotRange[] = [{ start: 5461, end: 10922 }];
const THIRD: SlotRange[] = [{ start: 10923, end: 16383 }];

function master(nodeId: string, port: number, slots: SlotRange[], extra: Partial<ClusterNode> = {}): ClusterNode {
  return {
    id: nodeId,
    address: `127.0.0.1:${port}`,
    role: "master",
    masterId: null,
    myself: false,
    failed: false,
    suspected: false,
    linkUp: true,
    configEpoch: port - 7000,
    slots,
    ...extra,
  };
}

function replica(nodeId: string, port: number, of: string, extra: Partial<ClusterNode> = {}): ClusterNode {
  return { ...master(nodeId, port, []), role: "replica", masterId: of, ...extra };
}

const member = (nodeId: string, port: number, slots: SlotRange[], replicaIds: string[] = []): MemberView => ({
  nodeId,
  address: `127.0.0.1:${port}`,
  slots,
  replicaIds,
});

/** A compact view of a plan: what happens to whom. */
function summary(members: MemberView[], nodes: ClusterNode[]) {
  const p = planTopology(members, nodes);
  const short = (x: string) => x[0]!;
  return {
    keep: p.keep.map((k) => short(k.nodeId)),
    retarget: p.retarget.map((r) => `${short(r.from)}->${short(r.to.id)} ${r.reason}`),
    add: p.add.map((n) => short(n.id)),
    retire: p.retire.map(short),
  };
}

describe("planTopology", () => {
  const three = [master(A, 7001, FIRST), master(B, 7002, SECOND), master(C, 7003, THIRD), replica(D, 7004, A)];

  const cases: Array<{ name: string; members: MemberView[]; nodes: ClusterNode[]; want: ReturnType<typeof summary> }> =
    [
      {
        name: "first read: every master that serves slots is added, replicas are not",
        members: [],
        nodes: three,
        want: { keep: [], retarget: [], add: ["a", "b", "c"], retire: [] },
      },
      {
        name: "nothing changed: all kept",
        members: [member(A, 7001, FIRST, [D]), member(B, 7002, SECOND), member(C, 7003, THIRD)],
        nodes: three,
        want: { keep: ["a", "b", "c"], retarget: [], add: [], retire: [] },
      },
      {
        name: "failover: the replica promoted takes over its old master's member",
        members: [member(A, 7001, FIRST, [D]), member(B, 7002, SECOND), member(C, 7003, THIRD)],
        nodes: [
          replica(A, 7001, D),
          master(B, 7002, SECOND),
          master(C, 7003, THIRD),
          master(D, 7004, FIRST, { configEpoch: 9 }),
        ],
        want: { keep: ["b", "c"], retarget: ["a->d failover"], add: [], retire: [] },
      },
      {
        name: "failover seen by a node that still lists the dead master with its slots: the live one wins",
        members: [member(A, 7001, FIRST, [D]), member(B, 7002, SECOND), member(C, 7003, THIRD)],
        nodes: [
          master(A, 7001, FIRST, { failed: true, configEpoch: 1 }),
          master(B, 7002, SECOND),
          master(C, 7003, THIRD),
          master(D, 7004, FIRST, { configEpoch: 9 }),
        ],
        want: { keep: ["b", "c"], retarget: ["a->d failover"], add: [], retire: [] },
      },
      {
        name: "a failed master without a successor keeps its member (it is reported down, not gone)",
        members: [member(A, 7001, FIRST), member(B, 7002, SECOND), member(C, 7003, THIRD)],
        nodes: [master(A, 7001, FIRST, { failed: true }), master(B, 7002, SECOND), master(C, 7003, THIRD)],
        want: { keep: ["a", "b", "c"], retarget: [], add: [], retire: [] },
      },
      {
        name: "a successor that was not a known replica is found by the slots it took over",
        members: [member(A, 7001, FIRST), member(B, 7002, SECOND), member(C, 7003, THIRD)],
        nodes: [master(B, 7002, SECOND), master(C, 7003, THIRD), master(E, 7005, FIRST)],
        want: { keep: ["b", "c"], retarget: ["a->e failover"], add: [], retire: [] },
      },
      {
        name: "a node that moved address is retargeted to the new address",
        members: [member(A, 7001, FIRST), member(B, 7002, SECOND), member(C, 7003, THIRD)],
        nodes: [master(A, 7101, FIRST), master(B, 7002, SECOND), master(C, 7003, THIRD)],
        want: { keep: ["b", "c"], retarget: ["a->a address-changed"], add: [], retire: [] },
      },
      {
        name: "resharding: a live master that gave all its slots away is retired, the one that took them added",
        members: [member(A, 7001, FIRST), member(B, 7002, SECOND), member(C, 7003, THIRD)],
        nodes: [
          master(A, 7001, []),
          master(B, 7002, [...SECOND, ...FIRST.map((r) => ({ start: r.start, end: 2000 }))]),
          master(C, 7003, THIRD),
          master(E, 7005, [{ start: 2001, end: 5460 }]),
        ],
        want: { keep: ["b", "c"], retarget: [], add: ["e"], retire: ["a"] },
      },
      {
        name: "takeover seen before the dead master is flagged failed: suspected, slotless, not a resharding",
        members: [member(A, 7001, FIRST, [D]), member(B, 7002, SECOND)],
        nodes: [
          master(A, 7001, [], { suspected: true }),
          master(B, 7002, SECOND),
          master(D, 7004, FIRST, { configEpoch: 9 }),
        ],
        want: { keep: ["b"], retarget: ["a->d failover"], add: [], retire: [] },
      },
      {
        name: "a slotless master the agent cannot reach was failed over, whatever the answering node thinks",
        members: [{ ...member(A, 7001, FIRST, [D]), down: true }, member(B, 7002, SECOND)],
        nodes: [master(A, 7001, []), master(B, 7002, SECOND), master(D, 7004, FIRST, { configEpoch: 9 })],
        want: { keep: ["b"], retarget: ["a->d failover"], add: [], retire: [] },
      },
      {
        name: "a master removed with nobody serving its old slots any more is retired",
        members: [member(A, 7001, [{ start: 0, end: 0 }]), member(B, 7002, SECOND)],
        nodes: [master(B, 7002, SECOND)],
        want: { keep: ["b"], retarget: [], add: [], retire: ["a"] },
      },
      {
        name: "a master without slots is not watched (it has no keys)",
        members: [],
        nodes: [master(A, 7001, FIRST), master(E, 7005, [])],
        want: { keep: [], retarget: [], add: ["a"], retire: [] },
      },
      {
        name: "a master whose address is unknown is not watched yet",
        members: [],
        nodes: [master(A, 7001, FIRST), master(E, 7005, SECOND, { address: null })],
        want: { keep: [], retarget: [], add: ["a"], retire: [] },
      },
      {
        name: "two dead masters and one successor: only one member moves",
        members: [member(A, 7001, FIRST, [D]), member(B, 7002, SECOND, [D])],
        nodes: [master(D, 7004, [...FIRST, ...SECOND])],
        want: { keep: [], retarget: ["a->d failover"], add: [], retire: ["b"] },
      },
    ];
  for (const c of cases) it(c.name, () => expect(summary(c.members, c.nodes)).toEqual(c.want));
});

describe("watchedMasters", () => {
  it("keeps a failed master nobody took over from, drops one a newer master took over from", () => {
    const kept = watchedMasters([master(A, 7001, FIRST, { failed: true })]);
    expect(kept.map((n) => n.id)).toEqual([A]);
    const dropped = watchedMasters([
      master(A, 7001, FIRST, { failed: true, configEpoch: 1 }),
      master(D, 7004, FIRST, { configEpoch: 5 }),
    ]);
    expect(dropped.map((n) => n.id)).toEqual([D]);
  });
});
