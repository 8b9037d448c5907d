import { describe, expect, it } from "vitest";
import { T0, UUID, node, seq } from "./zk-fixtures";
import type { Lock } from "../../lib/contract/lock";
import type { ReleaseCommand } from "../../lib/contract/release";
import {
  planCuratorSemaphore,
  planQueue,
  planSimple,
  toObservedLock,
  type ClientWatchTable,
  type LockShape,
  type NodeSample,
} from "../../agent/sources/zookeeper/queue";
import {
  afterDelete,
  decideZkRelease,
  releaseHolder,
  type ZkReleaseInput,
} from "../../agent/sources/zookeeper/zk-release";
import type { ZkStat } from "../../agent/sources/zookeeper/zk-port";

const SOURCE = "zookeeper://127.0.0.1:2181";

/** The stat ZooKeeper would return for the shape's holder right now. */
function statOf(shape: LockShape, over: Partial<ZkStat> = {}): ZkStat {
  const h = releaseHolder(shape)!;
  return {
    czxid: "0x10",
    ctimeMs: h.ctimeMs,
    ephemeralOwner: h.session,
    version: 0,
    dataLength: 0,
    numChildren: 0,
    ...over,
  };
}

/** The lock as the agent reported it for the shape (what the operator saw). */
function reportedOf(shape: LockShape): Lock {
  const obs = toObservedLock(shape, null, [], { sourceId: SOURCE, agentId: "a", observedAtMs: T0 });
  return { ...obs, since: obs.observedAt };
}

function cmd(expectedOwner: string, over: Partial<ReleaseCommand> = {}): ReleaseCommand {
  return {
    requestId: "r1",
    lockId: "l1",
    expectedOwner,
    dryRun: false,
    actor: "op",
    reason: "stuck batch job",
    ...over,
  };
}

function input(shape: LockShape, expectedOwner: string, over: Partial<ZkReleaseInput> = {}): ZkReleaseInput {
  return {
    cmd: cmd(expectedOwner),
    sourceId: SOURCE,
    reported: reportedOf(shape),
    shape,
    holderStat: statOf(shape),
    table: null,
    ...over,
  };
}

const seeds = (n: number, opts: Partial<NodeSample> = {}) =>
  planQueue(
    "/app/ParentLock",
    Array.from({ length: n }, (_, i) => node(`Lock${seq(i)}`, i, opts)),
  )!;

describe("decideZkRelease: what a force-release may delete", () => {
  it("deletes the holder's node at its observed version, and says who holds next", () => {
    const shape = seeds(3);
    const d = decideZkRelease(input(shape, `Lock${seq(0)}`, { holderStat: statOf(shape, { version: 4 }) }));
    expect(d).toMatchObject({ kind: "delete", path: `/app/ParentLock/Lock${seq(0)}`, version: 4 });
    expect(d.steps[0]).toBe(
      `delete /app/ParentLock/Lock${seq(0)} (version 4, session 0x1000) on ${SOURCE}; the next waiter Lock${seq(1)} becomes holder`,
    );
    expect(d.steps.join("\n")).toContain("the lock parent /app/ParentLock is kept");
  });

  it("says so when the holder's live session would lose its node (the operator's explicit intent)", () => {
    const shape = seeds(2);
    const table: ClientWatchTable = {
      byPath: new Map(),
      bySession: new Map(),
      hosts: new Map([["0x1000", "127.0.0.1:50000"]]),
      complete: true,
      sessionsComplete: true,
    };
    const live = decideZkRelease(input(shape, `Lock${seq(0)}`, { table }));
    expect(live.steps[2]).toMatch(
      /^session 0x1000 is still connected \(from 127\.0\.0\.1:50000\): ZooKeeper lets any client delete another session's ephemeral node, and that is exactly what you ask for here/,
    );
    const gone = decideZkRelease(input(shape, `Lock${seq(0)}`, { table: { ...table, hosts: new Map() } }));
    expect(gone.steps[2]).toMatch(/not connected to any server/);
    const unknown = decideZkRelease(input(shape, `Lock${seq(0)}`));
    expect(unknown.steps[2]).toMatch(/unknown/);
  });

  const refusals: Array<[string, () => ZkReleaseInput, string, RegExp]> = [
    [
      "the holder changed (another node holds)",
      () => input(seeds(3), `Lock${seq(7)}`),
      "refused-owner-changed",
      /holder is now Lock0000000000, not Lock0000000007/,
    ],
    [
      "the node was re-created by another session under the same name",
      () => {
        const shape = planSimple("/product-lock-42", node("product-lock-42", 1));
        return input(shape, "product-lock-42", { holderStat: statOf(shape, { ephemeralOwner: "0x9999" }) });
      },
      "refused-owner-changed",
      /new node since the view/,
    ],
    [
      "the node is the same session's but created again (ctime differs)",
      () => {
        const shape = planSimple("/product-lock-42", node("product-lock-42", 1));
        return input(shape, "product-lock-42", { holderStat: statOf(shape, { ctimeMs: T0 + 99_000 }) });
      },
      "refused-owner-changed",
      /new node/,
    ],
    [
      "the view the operator acted on showed another incarnation",
      () => {
        const shape = seeds(2);
        const reported = reportedOf(seeds(2, { session: "0xabc" }));
        return input(shape, `Lock${seq(0)}`, { reported });
      },
      "refused-owner-changed",
      /new node/,
    ],
    [
      "the holder is gone since the listing",
      () => ({ ...input(seeds(2), `Lock${seq(0)}`), holderStat: null }),
      "nothing-to-do",
      /went just now/,
    ],
    [
      "no contender is left",
      () => ({ ...input(seeds(1), `Lock${seq(0)}`), shape: null }),
      "nothing-to-do",
      /no contender holds/,
    ],
    [
      "the agent no longer reports the lock",
      () => ({ ...input(seeds(1), `Lock${seq(0)}`), reported: null }),
      "nothing-to-do",
      /no longer sees/,
    ],
    [
      "the node has children (not a contender)",
      () => {
        const shape = seeds(2);
        return input(shape, `Lock${seq(0)}`, { holderStat: statOf(shape, { numChildren: 2 }) });
      },
      "refused",
      /has 2 children/,
    ],
    [
      "a PERSISTENT node of an unrecognised naming (a queue item, a change log)",
      () => {
        const shape = planQueue("/jobs", [node(`job-${seq(0)}`, 0, { session: "0x0" })])!;
        return input(shape, `job-${seq(0)}`);
      },
      "refused",
      /PERSISTENT and not named by a recognised lock recipe/,
    ],
    [
      "a contender outside the lock path (never the parent)",
      () => {
        const shape = seeds(2);
        shape.contenders[0]!.path = "/app/ParentLock";
        return input(shape, `Lock${seq(0)}`);
      },
      "refused",
      /never deletes a lock parent/,
    ],
  ];

  it.each(refusals)("refuses when %s", (_what, make, outcome, message) => {
    const d = decideZkRelease(make());
    expect(d.kind).toBe("refuse");
    if (d.kind !== "refuse") return;
    expect(d.outcome).toBe(outcome);
    expect(d.message).toMatch(message);
  });

  it("a PERSISTENT contender of a recognised recipe may be deleted (the usual way such a lock is unblocked)", () => {
    const shape = planQueue("/app/ParentLock", [
      node(`Lock${seq(0)}`, 0, { session: "0x0" }),
      node(`Lock${seq(1)}`, 1),
    ])!;
    const d = decideZkRelease(input(shape, `Lock${seq(0)}`));
    expect(d.kind).toBe("delete");
    expect(d.steps[0]).toContain("session 0x0");
    expect(d.steps[2]).toMatch(/PERSISTENT \(no session owns it\)/);
  });

  it("a single-node lock is the node itself; the plan names the version-only guard of ZooKeeper's delete", () => {
    const shape = planSimple("/product-lock-42", node("product-lock-42", 1));
    const d = decideZkRelease(input(shape, "product-lock-42"));
    expect(d).toMatchObject({ kind: "delete", path: "/product-lock-42", version: 0 });
    expect(d.steps[1]).toMatch(/session and creation time were checked/);
    expect(d.steps.some((s) => s.includes("lock parent"))).toBe(false);
  });

  it("hostile names reach the plan escaped", () => {
    const shape = planQueue("/a\u0007b", [node(`Lock${seq(0)}`, 0), node(`Lock${seq(1)}`, 1)])!;
    const d = decideZkRelease(input(shape, `Lock${seq(0)}`));
    expect(d.steps[0]).toContain("/a\\x07b/Lock");
    expect(d.steps.join("")).not.toContain("\u0007");
  });
});

describe("afterDelete: who holds once the node is gone", () => {
  it("mutex: the next waiter; the last one: the lock becomes free", () => {
    const two = seeds(2);
    expect(afterDelete(two, two.contenders[0]!)).toBe(`the next waiter Lock${seq(1)} becomes holder`);
    const one = seeds(1);
    expect(afterDelete(one, one.contenders[0]!)).toBe("no waiter is queued: the lock becomes free");
  });

  it("read/write: deleting one of two readers promotes no one; deleting the writer promotes the readers behind it", () => {
    const r = (i: number) => node(`_c_${UUID(i)}-__READ__${seq(i)}`, i);
    const w = (i: number) => node(`_c_${UUID(i)}-__WRIT__${seq(i)}`, i);
    const readers = planQueue("/rw", [r(0), r(1), w(2)])!;
    expect(afterDelete(readers, readers.contenders[0]!)).toBe("1 other holder keeps holding; no waiter moves up");
    const writer = planQueue("/rw", [w(0), r(1), r(2), w(3)])!;
    expect(afterDelete(writer, writer.contenders[0]!)).toBe(
      `the next waiters _c_${UUID(1)}-__READ__${seq(1)}, _c_${UUID(2)}-__READ__${seq(2)} become holders`,
    );
  });

  it("semaphore: the first queued acquirer may take the freed lease", () => {
    const shape = planCuratorSemaphore(
      "/sem",
      [node(`_c_${UUID(0)}-lease-${seq(0)}`, 0)],
      [node(`_c_${UUID(1)}-lock-${seq(0)}`, 1)],
      null,
    )!;
    expect(afterDelete(shape, shape.contenders[0]!)).toBe(
      `a lease frees; the first queued acquirer locks/_c_${UUID(1)}-lock-${seq(0)} may take it`,
    );
  });
});
