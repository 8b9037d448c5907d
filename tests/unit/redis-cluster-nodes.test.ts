import { describe, expect, it } from "vitest";
import {
  parseClusterEnabled,
  parseClusterNodes,
  parseRedirect,
  slotsContain,
  slotsOverlap,
} from "../../agent/sources/redis/cluster-nodes";

const A = "f5d51308b819dee947445bc7585cee8cc66bf775";
const B = "d9dada291ba9a2fbe4e94f65b22286006af15278";
const C = "c35d196dded38fe6793c8ccff10caf164c8327b4";
const D = "f7e4bc4d8ba662c9ec35e4ec0bd7e55340750276";

/** Captured from redis-server 7.0.15: three masters, one replica of the first. */
const FOUR_NODES = [
  `${B} 127.0.0.1:17312@27312 master - 0 1795987675910 2 connected 5461-10922`,
  `${A} 127.0.0.1:17311@27311 myself,master - 0 1795987675000 1 connected 0-5460`,
  `${D} 127.0.0.1:17314@27314 slave ${A} 0 1795987676011 1 connected`,
  `${C} 127.0.0.1:17313@27313 master - 0 1795987676111 3 connected 10923-16383`,
  "",
].join("\n");

/** The same cluster after `CLUSTER FAILOVER` on the replica (captured). */
const AFTER_FAILOVER = [
  `${C} 127.0.0.1:17313@27313 master - 0 1795987683209 3 connected 10923-16383`,
  `${A} 127.0.0.1:17311@27311 slave ${D} 0 1795987683209 4 connected`,
  `${B} 127.0.0.1:17312@27312 myself,master - 0 1795987683000 2 connected 5461-10922`,
  `${D} 127.0.0.1:17314@27314 master - 0 1795987683209 4 connected 0-5460`,
].join("\n");

describe("parseClusterEnabled", () => {
  it.each([
    ["# Cluster\r\ncluster_enabled:1\r\n", true],
    ["# Cluster\r\ncluster_enabled:0\r\n", false],
    ["", false],
    ["cluster_enabled:10\n", false],
    ["# Cluster\ncluster_enabled:1", true],
  ])("%j -> %s", (text, want) => expect(parseClusterEnabled(text)).toBe(want));
});

describe("parseClusterNodes", () => {
  it("reads masters with their slots and replicas with their master", () => {
    const nodes = parseClusterNodes(FOUR_NODES);
    expect(nodes.map((n) => [n.id.slice(0, 4), n.address, n.role, n.masterId?.slice(0, 4) ?? null])).toEqual([
      ["d9da", "127.0.0.1:17312", "master", null],
      ["f5d5", "127.0.0.1:17311", "master", null],
      ["f7e4", "127.0.0.1:17314", "replica", "f5d5"],
      ["c35d", "127.0.0.1:17313", "master", null],
    ]);
    expect(nodes[1]).toMatchObject({ myself: true, failed: false, linkUp: true, configEpoch: 1 });
    expect(nodes[1]!.slots).toEqual([{ start: 0, end: 5460 }]);
    expect(nodes[2]!.slots).toEqual([]);
  });

  it("reads the roles swapped after a failover", () => {
    const nodes = parseClusterNodes(AFTER_FAILOVER);
    expect(nodes.find((n) => n.id === D)).toMatchObject({ role: "master", slots: [{ start: 0, end: 5460 }] });
    expect(nodes.find((n) => n.id === A)).toMatchObject({ role: "replica", masterId: D });
  });

  it("reads single slots, several ranges, and skips migrating/importing markers", () => {
    const [n] = parseClusterNodes(
      `${A} 127.0.0.1:7000@17000 master - 0 0 5 connected 0-10 42 100-200 [43->-${B}] [44-<-${C}]`,
    );
    expect(n!.slots).toEqual([
      { start: 0, end: 10 },
      { start: 42, end: 42 },
      { start: 100, end: 200 },
    ]);
  });

  it("reads hostnames, IPv6, failure flags and an address not known yet", () => {
    const nodes = parseClusterNodes(
      [
        `${A} 10.0.0.1:7000@17000,redis-0.example master,fail - 1 2 3 disconnected 0-100`,
        `${B} ::1:7001@17001 master,fail? - 0 0 4 connected 101-200`,
        `${C} :7002@17002 myself,master - 0 0 0 connected`,
        `${D} 10.0.0.4:7003@17003 slave,noaddr ${A} 0 0 3 connected`,
      ].join("\n"),
    );
    expect(nodes.map((n) => [n.address, n.failed, n.suspected, n.linkUp])).toEqual([
      ["10.0.0.1:7000", true, false, false],
      ["[::1]:7001", false, true, true],
      [null, false, false, true],
      [null, false, false, true],
    ]);
  });

  const malformed: Array<[string, string]> = [
    ["too few fields", `${A} 127.0.0.1:7000@17000 master -`],
    ["a node id that is not 40 hex", `xyz 127.0.0.1:7000@17000 master - 0 0 1 connected 0-5`],
    ["neither master nor replica", `${A} 127.0.0.1:7000@17000 handshake - 0 0 1 connected`],
    ["both master and replica", `${A} 127.0.0.1:7000@17000 master,slave ${B} 0 0 1 connected`],
    ["a replica without a master id", `${A} 127.0.0.1:7000@17000 slave - 0 0 1 connected`],
    ["a slot out of range", `${A} 127.0.0.1:7000@17000 master - 0 0 1 connected 0-16384`],
    ["a reversed range", `${A} 127.0.0.1:7000@17000 master - 0 0 1 connected 10-5`],
    ["a slot that is not a number", `${A} 127.0.0.1:7000@17000 master - 0 0 1 connected 1-x`],
    ["a config epoch that is not a number", `${A} 127.0.0.1:7000@17000 master - 0 0 e connected 0-5`],
  ];
  for (const [name, line] of malformed) {
    it(`leaves out a line with ${name}`, () => {
      expect(parseClusterNodes(`${line}\n${FOUR_NODES}`)).toHaveLength(4);
    });
  }

  it("gives a null address for an address it cannot read", () => {
    const [n] = parseClusterNodes(`${A} evil<host>:7000@17000 master - 0 0 1 connected 0-5`);
    expect(n!.address).toBeNull();
    const [m] = parseClusterNodes(`${A} 127.0.0.1:99999@17000 master - 0 0 1 connected 0-5`);
    expect(m!.address).toBeNull();
  });

  it("reads nothing from nothing", () => {
    expect(parseClusterNodes("")).toEqual([]);
    expect(parseClusterNodes("ERR This instance has cluster support disabled")).toEqual([]);
  });
});

describe("parseRedirect", () => {
  it.each([
    ["MOVED 3999 127.0.0.1:6381", { kind: "MOVED", slot: 3999, address: "127.0.0.1:6381" }],
    ["ASK 3999 127.0.0.1:6381", { kind: "ASK", slot: 3999, address: "127.0.0.1:6381" }],
    ["ReplyError: MOVED 0 [::1]:7000", { kind: "MOVED", slot: 0, address: "[::1]:7000" }],
    ["MOVED 16384 127.0.0.1:6381", null],
    ["CLUSTERDOWN The cluster is down", null],
    ["WRONGTYPE Operation against a key holding the wrong kind of value", null],
    ["MOVED abc 127.0.0.1:1", null],
    ["", null],
  ])("%j", (text, want) => expect(parseRedirect(text)).toEqual(want));
});

describe("slot ranges", () => {
  it("contain and overlap", () => {
    const r = [
      { start: 0, end: 10 },
      { start: 20, end: 20 },
    ];
    expect([0, 10, 11, 20, 21].map((s) => slotsContain(r, s))).toEqual([true, true, false, true, false]);
    expect(slotsOverlap(r, [{ start: 11, end: 19 }])).toBe(false);
    expect(slotsOverlap(r, [{ start: 10, end: 12 }])).toBe(true);
    expect(slotsOverlap(r, [])).toBe(false);
  });
});
