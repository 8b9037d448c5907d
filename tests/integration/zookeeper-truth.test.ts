/**
 * What the ZooKeeper source claims, checked against a real ZooKeeper 3.8 (harness) and real client sessions:
 * a herd of waiters is reported as a herd from what the server shows, never as a stuck waiter; and the seeds'
 * simplest lock (one EPHEMERAL node per resource) reports every handover with the holder's name from its data.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Lock, LockEvent } from "../../lib/contract/lock";
import { loadZookeeperConfig } from "../../agent/sources/zookeeper/zk-config";
import { createZookeeperSource, type ZookeeperSourceHandle } from "../../agent/sources/zookeeper/zookeeper-source";
import { waitFor } from "../harness/ports";
import { CreateMode, startZookeeper, zkCreate, zkMkdirp, type ZookeeperServer } from "../harness/zookeeper";
import type zookeeper from "node-zookeeper-client";

let zk: ZookeeperServer;
const handles: ZookeeperSourceHandle[] = [];

beforeAll(async () => {
  zk = await startZookeeper({ fourLetterWords: "all" });
});
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.close()));
});
afterAll(async () => {
  await zk?.stop();
});

function source(lockPaths: string): ZookeeperSourceHandle {
  const config = loadZookeeperConfig({
    ZK_CONNECT: zk.connect,
    ZK_LOCK_PATHS: lockPaths,
    ZK_SESSION_TIMEOUT_MS: "4000",
    ZK_REQUEST_TIMEOUT_MS: "2000",
  })!;
  const h = createZookeeperSource(config, {
    agentId: "it-truth",
    newId: randomUUID,
    log: () => undefined,
    fourLetterMinIntervalMs: 0,
    thresholds: { stuckGraceMs: 200 },
  });
  handles.push(h);
  return h;
}

async function pollUntil(h: ZookeeperSourceHandle, what: string, done: () => boolean, events: LockEvent[] = []) {
  await waitFor(
    what,
    async () => {
      events.push(...(await h.poll()).events);
      return done();
    },
    { timeoutMs: 15_000, intervalMs: 50 },
  );
  return events;
}

const lockAt = (h: ZookeeperSourceHandle, resource: string): Lock | undefined =>
  h.locks().find((l) => l.resource === resource);

/** A herd client: after every change it re-lists the parent with a children watch (never a data watch). */
function relistForever(c: zookeeper.Client, parent: string): void {
  c.getChildren(
    parent,
    () => relistForever(c, parent),
    () => undefined,
  );
}

describe("a herd of waiters on a real ZooKeeper", () => {
  it("is reported as a herd from the server's answers, never as a critical stuck waiter", async () => {
    const parent = `/it-${randomUUID()}/ParentLock`;
    const clients = await Promise.all(Array.from({ length: 7 }, () => zk.client()));
    await zkMkdirp(clients[0]!, parent);
    for (const c of clients) await zkCreate(c, `${parent}/Lock`, null, CreateMode.EPHEMERAL_SEQUENTIAL);
    for (const c of clients.slice(1)) relistForever(c, parent);
    const h = source(parent);
    expect(await h.whenConnected(10_000)).toBe(true);
    const seen: Lock[] = [];
    // a change to the parent, so every waiter re-lists it (what a herd does)
    const late = await zk.client();
    await zkCreate(late, `${parent}/Lock`, null, CreateMode.EPHEMERAL_SEQUENTIAL);
    await pollUntil(h, "the herd hazard", () => {
      const l = lockAt(h, parent);
      if (l) seen.push(l);
      return l?.hazards.some((z) => z.code === "herd") ?? false;
    });
    const herd = lockAt(h, parent)!.hazards.find((z) => z.code === "herd")!;
    expect(herd.severity).toBe("warning");
    expect(herd.message).toContain("(cons: lop=GETC)");
    expect(herd.message).toMatch(/The server holds \d+ watches its listings do not show/);
    // a few more reads: the waiters stay waiters, and nothing ever called them stuck
    for (let i = 0; i < 5; i++) {
      await h.poll();
      seen.push(lockAt(h, parent)!);
    }
    expect(seen.flatMap((l) => l.hazards.map((z) => z.code))).not.toContain("stuck-waiter");
  });
});

describe("the seeds' simplest lock: one EPHEMERAL node per resource", () => {
  it("reports every handover, with the holder's name from the node's data as the owner", async () => {
    const path = `/it-${randomUUID()}-product-lock-42`;
    const h = source(path);
    expect(await h.whenConnected(10_000)).toBe(true);
    const events: LockEvent[] = [];
    const drivers = ["driver-7", "driver-8", "driver-9", "driver-10"];
    let holder = await zk.client();
    await zkCreate(holder, path, Buffer.from(drivers[0]!), CreateMode.EPHEMERAL);
    await pollUntil(h, "driver-7 holding", () => lockAt(h, path)?.owner === "driver-7", events);
    for (const next of drivers.slice(1)) {
      // the holder's process dies and its waiter takes over at once, as the seed's waiters do on their exists watch
      const waiter = await zk.client();
      holder.close();
      await waitFor(`${next} creating the node`, async () => {
        try {
          await zkCreate(waiter, path, Buffer.from(next), CreateMode.EPHEMERAL);
          return true;
        } catch {
          return false; // the old node is still there until the server processes the closed session
        }
      });
      holder = waiter;
      await pollUntil(h, `${next} holding`, () => lockAt(h, path)?.owner === next, events);
    }
    holder.close();
    // every holder was acquired once: either a release and an acquire, or an owner change, per handover
    const takes = events.filter((e) => e.type === "acquired" || e.type === "owner-changed").map((e) => e.owner);
    expect(takes).toEqual(drivers);
  });
});
