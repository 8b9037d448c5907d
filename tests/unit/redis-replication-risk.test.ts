import { describe, expect, it } from "vitest";
import type { ReplicationInfo } from "../../agent/sources/redis/replication-info";
import {
  countMisses,
  NOT_REPLICATED,
  notReplicatedHazards,
  REQUIRED_MISSES,
  replicationNodes,
  unacknowledged,
  type MissCounts,
  type ReplicaCheck,
} from "../../agent/sources/redis/replication-risk";

const R1 = "127.0.0.1:6380";
const R2 = "127.0.0.1:6381";

/** Runs checks poll after poll and returns the hazards after the last. */
function afterPolls(polls: ReplicaCheck[][]) {
  let misses: MissCounts = new Map();
  for (const checks of polls) misses = countMisses(misses, checks);
  return notReplicatedHazards(misses);
}

describe("not-replicated decision", () => {
  const cases: Array<{ name: string; polls: ReplicaCheck[][]; flagged: string[] }> = [
    { name: "present everywhere: nothing", polls: [[{ replica: R1, missing: [] }]], flagged: [] },
    {
      name: "missing once (a write in flight): nothing yet",
      polls: [[{ replica: R1, missing: ["a"] }]],
      flagged: [],
    },
    {
      name: "missing two polls in a row: flagged",
      polls: [[{ replica: R1, missing: ["a"] }], [{ replica: R1, missing: ["a"] }]],
      flagged: ["a"],
    },
    {
      name: "missing, then there, then missing: the count starts over",
      polls: [[{ replica: R1, missing: ["a"] }], [{ replica: R1, missing: [] }], [{ replica: R1, missing: ["a"] }]],
      flagged: [],
    },
    {
      name: "the replica did not answer in between: an unanswered check proves nothing, the count starts over",
      polls: [[{ replica: R1, missing: ["a"] }], [], [{ replica: R1, missing: ["a"] }]],
      flagged: [],
    },
    {
      name: "missing on different replicas in turn: each replica counts on its own",
      polls: [[{ replica: R1, missing: ["a"] }], [{ replica: R2, missing: ["a"] }]],
      flagged: [],
    },
    {
      name: "only the lock that stays missing is flagged",
      polls: [[{ replica: R1, missing: ["a", "b"] }], [{ replica: R1, missing: ["b", "c"] }]],
      flagged: ["b"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => expect([...afterPolls(c.polls).keys()].sort()).toEqual(c.flagged));
  }

  it("is critical, names the replicas and keeps its message while the condition lasts", () => {
    const two = afterPolls([
      [
        { replica: R2, missing: ["a"] },
        { replica: R1, missing: ["a"] },
      ],
      [
        { replica: R2, missing: ["a"] },
        { replica: R1, missing: ["a"] },
      ],
    ]);
    const [h] = two.get("a")!;
    expect(h).toMatchObject({ code: NOT_REPLICATED, severity: "critical" });
    expect(h!.message).toContain(`replicas ${R1}, ${R2}`);
    expect(h!.message).toMatch(/failover .* second client/);
    const later = afterPolls(Array.from({ length: 7 }, () => [{ replica: R1, missing: ["a"] }]));
    const sooner = afterPolls(Array.from({ length: REQUIRED_MISSES }, () => [{ replica: R1, missing: ["a"] }]));
    expect(later.get("a")).toEqual(sooner.get("a"));
  });

  it("names a handful of replicas and counts the rest", () => {
    const many = Array.from({ length: 40 }, (_, i) => ({ replica: `10.0.0.${i + 10}:6379`, missing: ["a"] }));
    const [h] = afterPolls([many, many]).get("a")!;
    expect(h!.message).toContain("35 more");
    expect(h!.message.length).toBeLessThan(400);
  });

  it("drops replicas that left and keeps counting the ones that stay", () => {
    const first = countMisses(new Map(), [
      { replica: R1, missing: ["a"] },
      { replica: R2, missing: ["a"] },
    ]);
    const second = countMisses(first, [{ replica: R1, missing: ["a"] }]);
    expect([...second.keys()]).toEqual([R1]);
    expect(second.get(R1)!.get("a")).toBe(2);
  });
});

describe("unacknowledged (a replica that does not answer, by its master's account)", () => {
  const firstSeen = new Map([
    ["old", { offset: 100, atMs: 0 }],
    ["new", { offset: 500, atMs: 0 }],
    ["fresh", { offset: 600, atMs: 9000 }],
  ]);
  const ids = ["old", "new", "fresh", "never-seen"];
  const cases: Array<[string, number | undefined, number, string[]]> = [
    ["the replica acknowledged everything", 600, 10_000, []],
    [
      "acknowledged up to the old lock only: the newer ones are not confirmed once an ack is overdue",
      100,
      10_000,
      ["new"],
    ],
    ["nothing is overdue yet", 100, 1000, []],
    ["exactly at the grace", 100, 11_000, ["new", "fresh"]],
    ["no offset listed for the replica: no claim", undefined, 99_999, []],
  ];
  for (const [name, replicaOffset, now, want] of cases) {
    it(name, () => expect(unacknowledged(ids, firstSeen, replicaOffset, now)).toEqual(want));
  }
});

describe("replicationNodes", () => {
  const self = { id: "redis://127.0.0.1:6379", up: true, cluster: false, replicaId: (a: string) => `redis://${a}` };
  const master = (replicas: Extract<ReplicationInfo, { role: "master" }>["replicas"]): ReplicationInfo => ({
    role: "master",
    offset: 1000,
    replicas,
  });
  const link = (address: string, offset: number, state = "online") => ({
    address,
    host: address.split(":")[0]!,
    port: Number(address.split(":")[1]),
    state,
    offset,
    lagSeconds: 0,
  });

  it("shows the master with its offset and each replica with offset, byte lag and latency", () => {
    const nodes = replicationNodes(self, master([link(R1, 990), link(R2, 1000)]), [
      { address: R1, up: true, latencyMs: 1 },
      { address: R2, up: false, error: "connect ECONNREFUSED" },
    ]);
    expect(nodes).toEqual([
      { id: "redis://127.0.0.1:6379", role: "master", up: true, offset: 1000 },
      { id: `redis://${R1}`, role: "replica", up: true, latencyMs: 1, offset: 990, lagBytes: 10 },
      { id: `redis://${R2}`, role: "replica", up: false, offset: 1000, lagBytes: 0, error: "connect ECONNREFUSED" },
    ]);
  });

  it("calls a master without replicas standalone, except in a cluster", () => {
    expect(replicationNodes(self, master([]), [])[0]!.role).toBe("standalone");
    expect(replicationNodes({ ...self, cluster: true }, master([]), [])[0]!.role).toBe("master");
  });

  it("shows a replica in its first sync with its state, and unprobed replicas by the master's word", () => {
    const nodes = replicationNodes(self, master([link(R1, 0, "wait_bgsave"), link(R2, 1000)]), []);
    expect(nodes[1]).toMatchObject({ up: false, error: "replication state wait_bgsave", lagBytes: 1000 });
    expect(nodes[2]).toEqual({ id: `redis://${R2}`, role: "replica", up: true, offset: 1000, lagBytes: 0 });
  });

  it("shows a node that is itself a replica, and its broken link", () => {
    const info: ReplicationInfo = { role: "replica", offset: 55, masterAddress: "10.0.0.7:6379", linkUp: false };
    expect(replicationNodes(self, info, [])).toEqual([
      {
        id: "redis://127.0.0.1:6379",
        role: "replica",
        up: true,
        offset: 55,
        error: "replication link to master 10.0.0.7:6379 is down",
      },
    ]);
  });

  it("says why when INFO could not be read, and that the node is down when it is", () => {
    expect(replicationNodes(self, null, [], "INFO replication: NOPERM")).toEqual([
      { id: self.id, role: "unknown", up: true, error: "INFO replication: NOPERM" },
    ]);
    expect(replicationNodes({ ...self, up: false, error: "connection closed" }, master([]), [])[0]).toMatchObject({
      up: false,
      error: "connection closed",
    });
  });
});
