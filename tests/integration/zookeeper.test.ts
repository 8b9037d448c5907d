/**
 * The ZooKeeper source against real ZooKeeper 3.8 servers started by the harness. Contenders are real sessions
 * (node-zookeeper-client) following each recipe's node naming; no part of ZooKeeper is mocked.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Lock, LockEvent } from "../../lib/contract/lock";
import { longToHex, NodeZkPort } from "../../agent/sources/zookeeper/zk-client";
import { loadZookeeperConfig } from "../../agent/sources/zookeeper/zk-config";
import {
  createZookeeperSource,
  type ZookeeperFactoryDeps,
  type ZookeeperSourceHandle,
} from "../../agent/sources/zookeeper/zookeeper-source";
import type { HazardThresholds } from "../../agent/sources/zookeeper/zk-hazards";
import { waitFor } from "../harness/ports";
import {
  connectClient,
  CreateMode,
  startTcpProxy,
  startZookeeper,
  zkCreate,
  zkMkdirp,
  zkRemove,
  zkWatchChildren,
  zkWatchExists,
  type ZookeeperServer,
} from "../harness/zookeeper";
import type zookeeper from "node-zookeeper-client";

const EPHEMERAL_SEQUENTIAL = CreateMode.EPHEMERAL_SEQUENTIAL;
const uuid = () => randomUUID();
const hex32 = () => randomUUID().replace(/-/g, "");
const base = (p: string) => p.slice(p.lastIndexOf("/") + 1);
const sessionOf = (c: zookeeper.Client) => longToHex(c.getSessionId());

const handles: ZookeeperSourceHandle[] = [];

function source(
  connect: string,
  lockPaths: string,
  opts: { thresholds?: Partial<HazardThresholds>; port?: ZookeeperFactoryDeps["port"]; onChange?: () => void } = {},
): ZookeeperSourceHandle {
  const config = loadZookeeperConfig({
    ZK_CONNECT: connect,
    ZK_LOCK_PATHS: lockPaths,
    ZK_SESSION_TIMEOUT_MS: "4000",
    ZK_REQUEST_TIMEOUT_MS: "2000",
  })!;
  const deps: ZookeeperFactoryDeps = {
    agentId: "it-agent",
    newId: randomUUID,
    log: () => undefined,
    fourLetterMinIntervalMs: 0,
  };
  if (opts.thresholds) deps.thresholds = opts.thresholds;
  if (opts.port) deps.port = opts.port;
  if (opts.onChange) deps.onChange = opts.onChange;
  const h = createZookeeperSource(config, deps);
  handles.push(h);
  return h;
}

/** Polls the source until `done` holds (or the deadline passes), returning every event seen on the way. */
async function pollUntil(
  h: ZookeeperSourceHandle,
  what: string,
  done: (h: ZookeeperSourceHandle) => boolean,
  timeoutMs = 10_000,
): Promise<LockEvent[]> {
  const events: LockEvent[] = [];
  await waitFor(
    what,
    async () => {
      events.push(...(await h.poll()).events);
      return done(h);
    },
    // What the source said last: which state a wait that ran out was stuck in.
    { timeoutMs, intervalMs: 20, state: () => `source up ${h.status().up}, error: ${h.status().error ?? "none"}` },
  );
  return events;
}

const lockAt = (h: ZookeeperSourceHandle, resource: string): Lock | undefined =>
  h.locks().find((l) => l.resource === resource);

afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.close()));
});

describe("ZooKeeper with four-letter words allowed", () => {
  let zk: ZookeeperServer;
  beforeAll(async () => {
    zk = await startZookeeper({ fourLetterWords: "all" });
  });
  afterAll(async () => {
    await zk?.stop();
  });

  /** The seeds recipe: create Lock EPHEMERAL_SEQUENTIAL, then watch the node just before your own. */
  async function seedsContenders(parent: string, n: number) {
    const clients = await Promise.all(Array.from({ length: n }, () => zk.client()));
    await zkMkdirp(clients[0]!, parent);
    const nodes: string[] = [];
    for (const c of clients) nodes.push(await zkCreate(c, `${parent}/Lock`, null, EPHEMERAL_SEQUENTIAL));
    for (let i = 1; i < n; i++) await zkWatchExists(clients[i]!, nodes[i - 1]!);
    return { clients, nodes };
  }

  it("seeds ParentLock: holder, queue, observed watches; closing the holder's session moves the next waiter up within a second", async () => {
    const root = `/it-${uuid()}`;
    const parent = `${root}/ParentLock`;
    const { clients, nodes } = await seedsContenders(parent, 3);
    const [a, b, c] = clients as [zookeeper.Client, zookeeper.Client, zookeeper.Client];
    const h = source(zk.connect, root);
    expect(await h.whenConnected(10_000)).toBe(true);

    const first = await pollUntil(
      h,
      "the lock with observed watches",
      (s) => lockAt(s, parent)?.zookeeper?.watchesObserved === true,
    );
    expect(first.map((e) => [e.type, e.resource])).toEqual([["acquired", parent]]);
    const lock = lockAt(h, parent)!;
    expect(lock).toMatchObject({
      backend: "zookeeper",
      library: "seeds",
      rule: "seeds Lock<seq>",
      owner: base(nodes[0]!),
      ttlMs: null,
    });
    expect(lock.holder).toMatchObject({ session: sessionOf(a), sequence: 0, contenders: 3 });
    expect(lock.holder!.clientAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(lock.waiters.map((w) => w.owner)).toEqual([base(nodes[1]!), base(nodes[2]!)]);
    const view = lock.zookeeper!;
    expect(view.contenders.map((x) => [x.role, x.waitsFor])).toEqual([
      ["holder", null],
      ["waiter", base(nodes[0]!)],
      ["waiter", base(nodes[1]!)],
    ]);
    expect(view.contenders[0]!.watchedBy).toEqual([expect.objectContaining({ session: sessionOf(b), observed: true })]);
    expect(view.contenders[1]!.watchedBy).toEqual([expect.objectContaining({ session: sessionOf(c), observed: true })]);

    const closedAt = Date.now();
    a.close();
    const events = await pollUntil(
      h,
      "the next waiter to hold",
      (s) => lockAt(s, parent)?.owner === base(nodes[1]!),
      1000,
    );
    expect(Date.now() - closedAt).toBeLessThan(1000);
    expect(events).toEqual([
      expect.objectContaining({
        type: "owner-changed",
        owner: base(nodes[1]!),
        previousOwner: base(nodes[0]!),
        detail: expect.objectContaining({
          reason: "session-gone",
          previousSession: sessionOf(a),
          newSession: sessionOf(b),
          via: "watch",
          waitedMs: expect.any(Number),
        }),
      }),
    ]);
    // b queued before a closed: it waited at least that long (ZooKeeper's ctime, on this machine's clock).
    expect(events[0]!.detail!.waitedMs as number).toBeGreaterThanOrEqual(Date.now() - closedAt - 50);

    // b releases the way a client does (delete its node): its session is alive, so the reason differs.
    await zkRemove(b, nodes[1]!);
    const next = await pollUntil(h, "c to hold", (s) => lockAt(s, parent)?.owner === base(nodes[2]!), 1000);
    expect(next[0]!.detail).toMatchObject({ reason: "node-deleted" });
    await zkRemove(c, nodes[2]!);
    const released = await pollUntil(h, "the release", (s) => lockAt(s, parent) === undefined, 1000);
    expect(released.map((e) => e.type)).toEqual(["released"]);
  });

  it("recognises nodes named exactly as Curator, kazoo, zk-lock and ZooKeeper's recipes name them", async () => {
    const root = `/it-${uuid()}`;
    const s = await Promise.all(Array.from({ length: 8 }, () => zk.client()));
    const [s0, s1, s2, s3] = s as [zookeeper.Client, zookeeper.Client, zookeeper.Client, zookeeper.Client];
    const ip = Buffer.from("127.0.0.1");
    const mk = async (
      c: zookeeper.Client,
      path: string,
      data: Buffer | null = null,
      mode: number = EPHEMERAL_SEQUENTIAL,
    ) => {
      await zkMkdirp(s0, path.slice(0, path.lastIndexOf("/"))).catch(() => undefined);
      return base(await zkCreate(c, path, data, mode));
    };
    const [u0, u1, u2] = [uuid(), uuid(), uuid()];
    const mutex = [
      await mk(s0, `${root}/curator/mutex/_c_${u0}-lock-`, ip),
      await mk(s1, `${root}/curator/mutex/_c_${u1}-lock-`, ip),
    ];
    const rw = [
      await mk(s0, `${root}/curator/rw/_c_${u0}-__READ__`, ip),
      await mk(s1, `${root}/curator/rw/_c_${u1}-__WRIT__`, ip),
      await mk(s2, `${root}/curator/rw/_c_${u2}-__READ__`, ip),
    ];
    await mk(s0, `${root}/curator/sem/leases/_c_${u0}-lease-`, ip);
    await mk(s1, `${root}/curator/sem/locks/_c_${u1}-lock-`, ip);
    const latch = [
      await mk(s0, `${root}/curator/leader/_c_${u0}-latch-`, Buffer.from("node-a")),
      await mk(s1, `${root}/curator/leader/_c_${u1}-latch-`),
    ];
    const [k0, k1] = [hex32(), hex32()];
    const kazoo = [
      await mk(s0, `${root}/kazoo/lock/${k0}__lock__`, Buffer.from("worker-1")),
      await mk(s1, `${root}/kazoo/lock/${k1}__rlock__`),
    ];
    await zkMkdirp(s0, `${root}/kazoo/pool`, Buffer.from("1"));
    await mk(s2, `${root}/kazoo/pool/${hex32()}`, Buffer.from("holder"), CreateMode.EPHEMERAL);
    await mk(s3, `${root}/kazoo/pool-__lock__/${hex32()}__lock__`);
    const writeLock = await mk(
      s0,
      `${root}/zkrecipes/x-${s0.getSessionId().readBigInt64BE(0)}-`,
      Buffer.from([0x01, 0x02]),
    );
    await mk(s0, `${root}/docs/f81d4fae-lock-`);
    await mk(s0, `${root}/product-lock-42`, null, CreateMode.EPHEMERAL);
    await mk(s0, `${root}/gen/member_`);
    await mk(s0, `${root}/stale/Lock`, null, CreateMode.PERSISTENT_SEQUENTIAL);
    // zk-lock: data "lock", and every waiter watches the parent's children: a herd once five wait.
    for (const c of s.slice(0, 7)) {
      await mk(c, `${root}/locks/orders/lock-`, Buffer.from("lock"));
      await zkWatchChildren(c, `${root}/locks/orders`);
    }

    const h = source(zk.connect, root);
    await h.whenConnected(10_000);
    await pollUntil(h, "every lock discovered", (x) => x.locks().length === 12);
    const got = Object.fromEntries(
      h.locks().map((l) => [l.resource.slice(root.length), [l.library, l.zookeeper!.recipe, l.owner]]),
    );
    expect(got).toEqual({
      "/curator/mutex": ["curator", "curator-mutex", mutex[0]],
      "/curator/rw": ["curator", "curator-rwlock", rw[0]],
      "/curator/sem": ["curator", "curator-semaphore-v2", expect.stringMatching(/^leases\/_c_.*-lease-0000000000$/)],
      "/curator/leader": ["curator", "curator-leader-latch", latch[0]],
      "/kazoo/lock": ["kazoo", "kazoo-lock", kazoo[0]],
      "/kazoo/pool": ["kazoo", "kazoo-semaphore", expect.stringMatching(/^[0-9a-f]{32}$/)],
      "/zkrecipes": ["zookeeper-recipes", "zookeeper-write-lock", writeLock],
      "/docs": ["zookeeper-docs", "zookeeper-docs-lock", expect.stringMatching(/^f81d4fae-lock-\d{10}$/)],
      "/product-lock-42": ["generic", "simple-ephemeral", "product-lock-42"],
      "/gen": ["generic", "generic-sequential", "member_0000000000"],
      "/stale": ["seeds", "seeds-parent-lock", "Lock0000000000"],
      "/locks/orders": ["zk-lock", "npm-zk-lock", "lock-0000000000"],
    });
    const at = (p: string) => lockAt(h, `${root}${p}`)!;
    expect(at("/curator/mutex").holder).toMatchObject({ host: "127.0.0.1", clientId: u0 });
    expect(at("/curator/rw").zookeeper!.contenders.map((c) => [c.mode, c.role])).toEqual([
      ["read", "holder"],
      ["write", "waiter"],
      ["read", "waiter"],
    ]);
    expect(at("/curator/rw").zookeeper!.contenders[2]!.waitsFor).toBe(rw[1]);
    expect(at("/curator/leader").holder).toMatchObject({ participantId: "node-a" });
    expect(at("/kazoo/lock").holder).toMatchObject({ identifier: "worker-1", clientId: k0 });
    expect(at("/kazoo/pool").holder).toMatchObject({ maxLeases: 1, contenders: 2 });
    expect(at("/zkrecipes").holder).toMatchObject({ nameSession: sessionOf(s0) });
    expect(at("/stale").hazards.map((x) => x.code)).toContain("persistent-contender");
    expect(at("/locks/orders").hazards.map((x) => x.code)).toContain("herd");
    expect(at("/locks/orders").zookeeper!.contenders[1]!.waitsFor).toBe(`${root}/locks/orders`);
    expect(latch).toHaveLength(2);
    expect(kazoo).toHaveLength(2);
  });

  it("sees a waiter stuck on its gone predecessor through the server's watch table", async () => {
    const root = `/it-${uuid()}`;
    const parent = `${root}/ParentLock`;
    const { clients, nodes } = await seedsContenders(parent, 3);
    const [, b, c] = clients as [zookeeper.Client, zookeeper.Client, zookeeper.Client];
    // b gives up; c's watch fires and, buggy, re-arms an exists watch on the node that is gone instead of moving on.
    let fired = false;
    await zkWatchExists(c, nodes[1]!, () => (fired = true));
    await zkRemove(b, nodes[1]!);
    await waitFor("c's watch to fire", () => fired);
    expect(await zkWatchExists(c, nodes[1]!)).toBe(false);

    const h = source(zk.connect, root, { thresholds: { stuckGraceMs: 200 } });
    await h.whenConnected(10_000);
    await pollUntil(h, "the stuck-waiter hazard", (x) =>
      (lockAt(x, parent)?.hazards ?? []).some((z) => z.code === "stuck-waiter"),
    );
    expect(lockAt(h, parent)!.hazards.find((z) => z.code === "stuck-waiter")!.message).toContain(
      `still watches ${base(nodes[1]!)}`,
    );
  });

  it("works below a chroot: paths are the application's, watches still matched", async () => {
    const chroot = `/it-${uuid()}`;
    const { nodes } = await seedsContenders(`${chroot}/ParentLock`, 2);
    const h = source(`${zk.connect}${chroot}`, "/ParentLock");
    await h.whenConnected(10_000);
    await pollUntil(
      h,
      "observed watches under the chroot",
      (x) => (lockAt(x, "/ParentLock")?.zookeeper?.contenders[0]?.watchedBy ?? []).length > 0,
    );
    const lock = lockAt(h, "/ParentLock")!;
    expect(lock.owner).toBe(base(nodes[0]!));
    expect(lock.source).toBe(`zookeeper://${zk.connect}${chroot}`);
    expect(lock.zookeeper!.contenders[0]!.watchedBy[0]!.observed).toBe(true);
  });

  it("a parent with 10,000 contenders is read in bounded batches and followed by its watch", async () => {
    const parent = `/it-${uuid()}/big`;
    const owner = await zk.client({ sessionTimeoutMs: 20_000 });
    await zkMkdirp(owner, parent);
    const created: string[] = [];
    for (let batch = 0; batch < 10; batch++) {
      created.push(
        ...(await Promise.all(
          Array.from({ length: 1000 }, () => zkCreate(owner, `${parent}/Lock`, null, EPHEMERAL_SEQUENTIAL)),
        )),
      );
    }
    const h = source(zk.connect, parent);
    await h.whenConnected(10_000);
    const t0 = Date.now();
    await pollUntil(h, "the big lock", (x) => lockAt(x, parent) !== undefined, 30_000);
    const firstMs = Date.now() - t0;
    const lock = lockAt(h, parent)!;
    expect(lock.holder!.contenders).toBe(10_000);
    expect(lock.waiters).toHaveLength(1000);

    const sorted = [...created].sort();
    await zkRemove(owner, sorted[0]!);
    const t1 = Date.now();
    await pollUntil(h, "the next holder", (x) => lockAt(x, parent)?.owner === base(sorted[1]!), 5000);
    const nextMs = Date.now() - t1;
    console.log(`10,000 contenders: first read ${firstMs} ms, holder change seen after ${nextMs} ms`);
  });

  it("the agent's own session expires: it reconnects with a new session, re-arms its watches and resyncs", async () => {
    const root = `/it-${uuid()}`;
    const parent = `${root}/ParentLock`;
    await seedsContenders(parent, 2);
    const proxy = await startTcpProxy(zk.port);
    try {
      const port = new NodeZkPort({
        connect: `127.0.0.1:${proxy.port}`,
        auth: null,
        sessionTimeoutMs: 4000,
        requestTimeoutMs: 2000,
        log: () => undefined,
      });
      let changes = 0;
      const h = source(`127.0.0.1:${proxy.port}`, root, { port, onChange: () => changes++ });
      await h.whenConnected(10_000);
      const seen = await pollUntil(h, "the lock", (x) => lockAt(x, parent) !== undefined);
      const before = port.session()!;
      const creds = port.sessionCredentials()!;

      // Cut the agent off, then end its session from a second client holding the same id and password.
      await proxy.cut();
      await waitFor("the agent to notice", () => port.state() !== "connected");
      const thief = await connectClient(zk.connect, 4000, { sessionId: creds.id, sessionPassword: creds.password });
      expect(sessionOf(thief)).toBe(before);
      await new Promise<void>((resolve) => {
        thief.once("disconnected", () => resolve());
        thief.close();
      });
      await proxy.restore();

      const during = await pollUntil(
        h,
        "a new session, up again",
        (x) => port.session() !== null && port.session() !== before && x.status().up,
      );
      expect([...seen, ...during].filter((e) => e.type !== "acquired")).toEqual([]);
      expect(lockAt(h, parent)!.zookeeper!.contenders).toHaveLength(2);

      // The re-armed child watch reports a newcomer without waiting for the next resync.
      changes = 0;
      const late = await zk.client();
      await zkCreate(late, `${parent}/Lock`, null, EPHEMERAL_SEQUENTIAL);
      await waitFor("onChange from the re-armed watch", () => changes > 0, { timeoutMs: 2000 });
      await pollUntil(h, "three contenders", (x) => lockAt(x, parent)?.zookeeper?.contenders.length === 3, 2000);
    } finally {
      await proxy.close();
    }
  });
});

describe("ZooKeeper without four-letter words", () => {
  let zk: ZookeeperServer;
  beforeAll(async () => {
    zk = await startZookeeper({ fourLetterWords: "none" });
  });
  afterAll(async () => {
    await zk?.stop();
  });

  it("falls back to inferred watches and says so", async () => {
    expect(await zk.fourLetter("wchp")).toBe("wchp is not executed because it is not in the whitelist.\n");
    const root = `/it-${uuid()}`;
    const a = await zk.client();
    const b = await zk.client();
    await zkMkdirp(a, `${root}/ParentLock`);
    const na = await zkCreate(a, `${root}/ParentLock/Lock`, null, EPHEMERAL_SEQUENTIAL);
    await zkCreate(b, `${root}/ParentLock/Lock`, null, EPHEMERAL_SEQUENTIAL);
    await zkWatchExists(b, na);
    const h = source(zk.connect, root);
    await h.whenConnected(10_000);
    await pollUntil(h, "the lock", (x) => lockAt(x, `${root}/ParentLock`) !== undefined);
    const lock = lockAt(h, `${root}/ParentLock`)!;
    expect(lock.zookeeper!.watchesObserved).toBe(false);
    expect(lock.zookeeper!.contenders[0]!.watchedBy).toEqual([{ session: sessionOf(b), observed: false }]);
    expect(lock.holder!.clientAddress).toBeUndefined();
    expect(h.status().up).toBe(true);
  });
});

describe("ZooKeeper going away", () => {
  let zk: ZookeeperServer;
  beforeAll(async () => {
    zk = await startZookeeper({ fourLetterWords: "all" });
  });
  afterAll(async () => {
    await zk?.stop();
  });

  it("a dead server marks the source down and stale, with no release; after a restart the same locks are there", async () => {
    const root = `/it-${uuid()}`;
    const parent = `${root}/ParentLock`;
    const a = await zk.client({ sessionTimeoutMs: 20_000 });
    const b = await zk.client({ sessionTimeoutMs: 20_000 });
    await zkMkdirp(a, parent);
    const na = await zkCreate(a, `${parent}/Lock`, null, EPHEMERAL_SEQUENTIAL);
    await zkCreate(b, `${parent}/Lock`, null, EPHEMERAL_SEQUENTIAL);
    const h = source(zk.connect, root);
    await h.whenConnected(10_000);
    await pollUntil(h, "the lock", (x) => lockAt(x, parent) !== undefined);

    await zk.kill();
    const down = await pollUntil(h, "the source down", (x) => !x.status().up);
    for (let i = 0; i < 5; i++) down.push(...(await h.poll()).events);
    expect(down).toEqual([]);
    expect(h.status()).toMatchObject({ up: false, locks: 1 });
    expect(lockAt(h, parent)!.owner).toBe(base(na));

    await zk.restart();
    // Within a second when the machine is quiet; once, in a full test run beside a 10 M-key bench, not within 20 s
    // (2026-12-07; why was not found: a failure now names the source's last state).
    const back = await pollUntil(h, "the source up again", (x) => x.status().up, 60_000);
    expect(back.filter((e) => e.type === "released" || e.type === "owner-changed")).toEqual([]);
    expect(lockAt(h, parent)!.owner).toBe(base(na));
  });
});
