import { describe, expect, it } from "vitest";
import {
  confirmCuratorSemaphore,
  dominantRecipe,
  looksLikeIpAddress,
  looksLikeSimpleLockName,
  parseKazooMaxLeases,
  parseSequence,
  recogniseChild,
  recogniseParent,
  splitSequence,
  type RecipeId,
} from "../../agent/sources/zookeeper/recipes";

const UUID = "3f2a9c4e-1b2d-4c3e-9f8a-0123456789ab";
const HEX = "0123456789abcdef0123456789abcdef";

describe("parseSequence", () => {
  it.each([
    ["0000000000", 0],
    ["0000000007", 7],
    ["2147483647", 2147483647],
    ["-000000001", -1],
    ["-999999999", -999999999],
    ["-1500000000", -1500000000],
    ["-2147483648", -2147483648],
    ["2147483648", null], // beyond int: the server never writes it
    ["-2147483649", null],
    ["000000001", null], // nine digits without a sign
    ["00000000001", null], // eleven digits
    ["-0123456789", null], // %010d never pads a ten-digit magnitude
    ["+000000001", null],
    ["00000000a1", null],
    ["", null],
  ])("%j -> %j", (text, want) => {
    expect(parseSequence(text)).toBe(want);
  });
});

describe("splitSequence (names of unknown format)", () => {
  it.each([
    ["Lock0000000003", { prefix: "Lock", sequence: 3 }],
    ["lock-0000000003", { prefix: "lock-", sequence: 3 }],
    ["n_-000000005", { prefix: "n_", sequence: -5 }],
    ["x-2147483648", { prefix: "x", sequence: -2147483648 }],
    ["job-9999999999", null], // ten digits, but above any int: a timestamp, not a sequence
    ["no-digits", null],
    ["short123", null],
  ])("%j -> %j", (name, want) => {
    expect(splitSequence(name)).toEqual(want);
  });
});

describe("recogniseChild", () => {
  const cases: Array<{
    name: string;
    data?: string;
    want: null | { recipe: RecipeId; library: string; mode: string; sequence: number; nameId?: string };
  }> = [
    { name: "Lock0000000000", want: { recipe: "seeds-parent-lock", library: "seeds", mode: "exclusive", sequence: 0 } },
    {
      name: "Lock-000000001",
      want: { recipe: "seeds-parent-lock", library: "seeds", mode: "exclusive", sequence: -1 },
    },
    {
      name: "Lock-1500000000",
      want: { recipe: "seeds-parent-lock", library: "seeds", mode: "exclusive", sequence: -1500000000 },
    },
    {
      name: `_c_${UUID}-lock-0000000007`,
      want: { recipe: "curator-mutex", library: "curator", mode: "exclusive", sequence: 7, nameId: UUID },
    },
    {
      name: `_c_${UUID}-__READ__0000000001`,
      want: { recipe: "curator-rwlock", library: "curator", mode: "read", sequence: 1 },
    },
    {
      name: `_c_${UUID}-__WRIT__0000000002`,
      want: { recipe: "curator-rwlock", library: "curator", mode: "write", sequence: 2 },
    },
    {
      name: `_c_${UUID}-lease-0000000003`,
      want: { recipe: "curator-semaphore-v2", library: "curator", mode: "lease", sequence: 3 },
    },
    {
      name: `_c_${UUID}-latch-0000000004`,
      want: { recipe: "curator-leader-latch", library: "curator", mode: "latch", sequence: 4 },
    },
    {
      name: `_c_${UUID}-lock--000000009`,
      want: { recipe: "curator-mutex", library: "curator", mode: "exclusive", sequence: -9 },
    },
    {
      name: `${HEX}__lock__0000000005`,
      want: { recipe: "kazoo-lock", library: "kazoo", mode: "exclusive", sequence: 5, nameId: HEX },
    },
    { name: `${HEX}__rlock__0000000006`, want: { recipe: "kazoo-lock", library: "kazoo", mode: "read", sequence: 6 } },
    {
      name: "x-72057594037927936-0000000010",
      want: {
        recipe: "zookeeper-write-lock",
        library: "zookeeper-recipes",
        mode: "exclusive",
        sequence: 10,
        nameId: "72057594037927936",
      },
    },
    {
      name: "x--8935141660703064064-0000000011",
      want: { recipe: "zookeeper-write-lock", library: "zookeeper-recipes", mode: "exclusive", sequence: 11 },
    },
    {
      name: "lock-0000000001",
      data: "lock",
      want: { recipe: "npm-zk-lock", library: "zk-lock", mode: "exclusive", sequence: 1 },
    },
    {
      name: "lock-0000000001",
      data: "10.1.2.3",
      want: { recipe: "curator-mutex", library: "curator", mode: "exclusive", sequence: 1 },
    },
    {
      name: "lock-0000000001",
      data: "fe80:0:0:0:1:2:3:4%eth0",
      want: { recipe: "curator-mutex", library: "curator", mode: "exclusive", sequence: 1 },
    },
    {
      name: "lock-0000000001",
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "exclusive", sequence: 1 },
    },
    {
      name: "lock-0000000001",
      data: "locked",
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "exclusive", sequence: 1 },
    },
    {
      name: "f81d4fae-7dec-lock-0000000012",
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "exclusive", sequence: 12 },
    },
    {
      name: "read-0000000013",
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "read", sequence: 13 },
    },
    {
      name: "guid-write-0000000014",
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "write", sequence: 14 },
    },
    {
      name: "member_0000000015",
      want: { recipe: "generic-sequential", library: "generic", mode: "exclusive", sequence: 15 },
    },
    // Near misses fall through to the generic rule or to nothing, never to the wrong library.
    // Java's UUID.toString() is lowercase: an uppercase one is not Curator's, but still fits the docs' <guid>-lock-.
    {
      name: `_c_${UUID.toUpperCase()}-lock-0000000001`,
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "exclusive", sequence: 1 },
    },
    {
      name: `${HEX.toUpperCase()}__lock__0000000001`,
      want: { recipe: "generic-sequential", library: "generic", mode: "exclusive", sequence: 1 },
    },
    { name: `${HEX}__lock__000000001`, want: null },
    {
      name: "Lock00000000001",
      want: { recipe: "generic-sequential", library: "generic", mode: "exclusive", sequence: 1 },
    },
    {
      name: "_c_not-a-uuid-lock-0000000001",
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "exclusive", sequence: 1 },
    },
    { name: "leases", want: null },
    { name: "product-lock-42", want: null },
    { name: "", want: null },
    // Hostile names: recognised by their suffix, never crash.
    {
      name: "\u202eLock0000000001",
      want: { recipe: "generic-sequential", library: "generic", mode: "exclusive", sequence: 1 },
    },
    {
      name: `${"a".repeat(10_000)}0000000001`,
      want: { recipe: "generic-sequential", library: "generic", mode: "exclusive", sequence: 1 },
    },
    {
      name: "<script>alert(1)</script>-lock-0000000002",
      want: { recipe: "zookeeper-docs-lock", library: "zookeeper-docs", mode: "exclusive", sequence: 2 },
    },
  ];
  it.each(cases)("$name (data $data)", ({ name, data, want }) => {
    const got = recogniseChild(name, data === undefined ? null : Buffer.from(data));
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatchObject(want);
  });

  it("always names the rule that matched", () => {
    expect(recogniseChild(`${HEX}__rlock__0000000006`)?.rule).toBe("kazoo <32hex>__rlock__<seq>");
    expect(recogniseChild("member_0000000015")?.rule).toBe("generic <prefix><seq>");
  });
});

describe("looksLikeIpAddress", () => {
  it.each([
    ["10.0.0.1", true],
    ["255.255.255.255", true],
    ["256.1.1.1", false],
    ["0:0:0:0:0:0:0:1", true],
    ["fe80:0:0:0:1:2:3:4%eth0", true],
    ["lock", false],
    ["", false],
    ["1.2.3", false],
    ["a".repeat(100), false],
  ])("%j -> %j", (text, want) => {
    expect(looksLikeIpAddress(Buffer.from(text))).toBe(want);
  });
  it("null data is no address", () => expect(looksLikeIpAddress(null)).toBe(false));
});

describe("recogniseParent", () => {
  it.each([
    { name: "no children", parent: "p", children: [], siblings: [], want: "none" },
    {
      name: "seeds queue",
      parent: "ParentLock",
      children: ["Lock0000000001", "Lock0000000000"],
      siblings: [],
      want: "queue",
    },
    {
      name: "curator semaphore (to be confirmed)",
      parent: "sem",
      children: ["leases", "locks"],
      siblings: [],
      want: "curator-semaphore-v2-candidate",
    },
    {
      name: "a lone 'locks' directory (to be confirmed)",
      parent: "",
      children: ["locks"],
      siblings: [],
      want: "curator-semaphore-v2-candidate",
    },
    {
      name: "kazoo semaphore",
      parent: "pool",
      children: [HEX],
      siblings: ["pool", "pool-__lock__"],
      want: "kazoo-semaphore",
    },
    { name: "hex names without the queue sibling", parent: "pool", children: [HEX], siblings: ["pool"], want: "none" },
    {
      name: "mostly non-sequential",
      parent: "conf",
      children: ["a", "b", "c", "Lock0000000001"],
      siblings: [],
      want: "none",
    },
    { name: "plain directory", parent: "brokers", children: ["ids", "topics"], siblings: [], want: "none" },
  ])("$name -> $want", ({ parent, children, siblings, want }) => {
    expect(recogniseParent(parent, children, siblings).shape).toBe(want);
  });

  it("picks the most common recipe, ties to the more specific", () => {
    expect(dominantRecipe([{ recipe: "generic-sequential" }, { recipe: "curator-mutex" }])).toBe("curator-mutex");
    expect(
      dominantRecipe([{ recipe: "generic-sequential" }, { recipe: "generic-sequential" }, { recipe: "curator-mutex" }]),
    ).toBe("generic-sequential");
    expect(dominantRecipe([])).toBeNull();
  });
});

describe("confirmCuratorSemaphore", () => {
  const lease = "_c_3f2a9c4e-1b2d-4c3e-9f8a-0123456789ab-lease-0000000001";
  it.each([
    { name: "leases and locks both present", children: ["leases", "locks"], leases: [], want: true },
    { name: "leases holding a Curator lease", children: ["leases"], leases: [lease], want: true },
    {
      name: "only 'locks': the usual /locks directory, or a mutex at <app>/locks",
      children: ["locks"],
      leases: null,
      want: false,
    },
    { name: "leases holding something else", children: ["leases"], leases: ["lease-0000000001"], want: false },
    { name: "other children too", children: ["leases", "locks", "x"], leases: [lease], want: false },
  ])("$name -> $want", ({ children, leases, want }) => {
    expect(confirmCuratorSemaphore(children, leases)).toBe(want);
  });
});

describe("small recognisers", () => {
  it.each([
    ["product-lock-42", true],
    ["MUTEX_orders", true],
    ["controller", false],
    ["lock-0000000001", false],
  ])("simple lock name %j -> %j", (name, want) => expect(looksLikeSimpleLockName(name)).toBe(want));

  it.each([
    ["3", 3],
    [" 12\n", 12],
    ["0", null],
    ["-1", null],
    ["many", null],
    ["9999999999", null],
  ])("kazoo max leases %j -> %j", (text, want) => expect(parseKazooMaxLeases(Buffer.from(text))).toBe(want));
});
