import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Lock, LockEvent, NodeStatus } from "../../lib/contract/lock";
import type { RedisSources } from "../../agent/sources/redis/redis-sources";
import { inProcessRedisSources } from "../harness/in-process-sources";
import { freePort } from "../harness/ports";
import { startRedis, type RedisServer } from "../harness/redis";
import { replicationArgs } from "../harness/redis-cluster";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc, stopStack } from "../harness/stack";

/**
 * The replication link runs through this proxy, so a test can cut it while both servers keep answering clients:
 * the replica then lacks every write made since, and its master still lists it (until repl-timeout, 60 s).
 */
interface LinkProxy {
  port: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function startLinkProxy(upstreamPort: number): Promise<LinkProxy> {
  const port = await freePort();
  const pairs: Array<[Socket, Socket]> = [];
  let cut = false;
  const server: Server = createServer((down) => {
    const up = connect(upstreamPort, "127.0.0.1");
    down.pipe(up);
    up.pipe(down);
    const end = () => {
      down.destroy();
      up.destroy();
    };
    down.on("error", end).on("close", end);
    up.on("error", end).on("close", end);
    pairs.push([down, up]);
    if (cut) {
      down.pause();
      up.pause();
    }
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return {
    port,
    // Paused sockets stop reading: the bytes wait in buffers, nothing reaches the other side, no error is seen.
    cut() {
      cut = true;
      for (const [a, b] of pairs) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
      }
    },
    restore() {
      cut = false;
      for (const [a, b] of pairs) {
        a.pipe(b);
        b.pipe(a);
        a.resume();
        b.resume();
      }
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const dirs: string[] = [];
function tempDir(name: string): string {
  const d = mkdtempSync(path.join(tmpdir(), `lockscope-repl-${name}-`));
  dirs.push(d);
  return d;
}

/** The agent's Redis sources in this process, against real servers; every poll's events are kept. */
function watch(url: string): { sources: RedisSources; events: LockEvent[]; poll(): Promise<void>; locks(): Lock[] } {
  const sources = inProcessRedisSources(url, "it-replication");
  const events: LockEvent[] = [];
  const source = sources.sources[0]!;
  return {
    sources,
    events,
    async poll() {
      events.push(...(await source.poll()).events);
    },
    locks: () => source.locks(),
  };
}

const codes = (l: Lock | undefined) => l?.hazards.map((h) => h.code) ?? [];

let master: RedisServer;
let replica: RedisServer;
let proxy: LinkProxy;
const watchers: RedisSources[] = [];
const prefix = `repl-${Date.now()}`;

beforeAll(async () => {
  master = await startRedis(replicationArgs(tempDir("master")));
  proxy = await startLinkProxy(master.port);
  replica = await startRedis([...replicationArgs(tempDir("replica")), "--replicaof", "127.0.0.1", String(proxy.port)]);
  const m = master.client();
  await waitFor("replica online", async () => /slave0:.*state=online/.test(await m.info("replication")));
});

afterAll(async () => {
  for (const w of watchers) w.close();
  replica?.thaw();
  await proxy?.close();
  await replica?.stop();
  await master?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("replication risk on a real master and replica", () => {
  it("shows each node's role, offset and lag, and no hazard for a lock the replica has", async () => {
    const w = watch(master.url);
    watchers.push(w.sources);
    await w.sources.ready;
    const key = `${prefix}:lock:replicated`;
    await master.client().set(key, "tok-1", "PX", 60_000);
    let polls = 0;
    // Replicas acknowledge once a second: until the first ack the master lists offset 0 for it.
    const replicaOffset = () => w.sources.sources[0]!.status().nodes?.[1]?.offset ?? 0;
    await waitFor("lock seen on the master over several polls, and the replica's ack", async () => {
      await w.poll();
      return w.locks().some((l) => l.resource === key) && ++polls >= 4 && replicaOffset() > 0;
    });
    expect(codes(w.locks().find((l) => l.resource === key))).not.toContain("not-replicated");
    const nodes = w.sources.sources[0]!.status().nodes!;
    expect(nodes[0]).toMatchObject({ id: `redis://127.0.0.1:${master.port}`, role: "master", up: true });
    expect(nodes[0]!.offset).toBeGreaterThan(0);
    const r = nodes[1] as NodeStatus;
    expect(r).toMatchObject({ id: `redis://127.0.0.1:${replica.port}`, role: "replica", up: true });
    expect(r.offset).toBeGreaterThan(0);
    expect(r.lagBytes).toBeGreaterThanOrEqual(0);
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("flags a lock the replica still lacks after two polls, and clears it once the link is back", async () => {
    const w = watch(master.url);
    watchers.push(w.sources);
    await w.sources.ready;
    const key = `${prefix}:lock:stranded`;
    proxy.cut();
    try {
      await master.client().set(key, "tok-2", "PX", 60_000);
      await waitFor("not-replicated on the stranded lock", async () => {
        await w.poll();
        return codes(w.locks().find((l) => l.resource === key)).includes("not-replicated");
      });
      const h = w
        .locks()
        .find((l) => l.resource === key)!
        .hazards.find((x) => x.code === "not-replicated")!;
      expect(h.severity).toBe("critical");
      expect(h.message).toContain(`replica 127.0.0.1:${replica.port}`);
      expect(h.message).not.toContain("acknowledged"); // the replica answered: this was read, not inferred
      expect(await replica.client().exists(key)).toBe(0);
    } finally {
      proxy.restore();
    }
    await waitFor("hazard cleared once replicated", async () => {
      await w.poll();
      return !codes(w.locks().find((l) => l.resource === key)).includes("not-replicated");
    });
    expect(w.events.filter((e) => e.resource === key).map((e) => e.type)).toEqual(["acquired"]);
  });

  it("judges a frozen replica by what its master says it acknowledged", async () => {
    const w = watch(master.url);
    watchers.push(w.sources);
    await w.sources.ready;
    const key = `${prefix}:lock:frozen`;
    replica.freeze();
    try {
      await master.client().set(key, "tok-3", "PX", 60_000);
      await waitFor(
        "not-replicated by the master's account",
        async () => {
          await w.poll();
          return codes(w.locks().find((l) => l.resource === key)).includes("not-replicated");
        },
        { timeoutMs: 20_000 },
      );
      const h = w
        .locks()
        .find((l) => l.resource === key)!
        .hazards.find((x) => x.code === "not-replicated")!;
      expect(h.message).toContain("which has not acknowledged it");
      expect(w.sources.sources[0]!.status().nodes![1]).toMatchObject({ role: "replica", up: false });
    } finally {
      replica.thaw();
    }
    await waitFor("hazard cleared once the replica catches up", async () => {
      await w.poll();
      return !codes(w.locks().find((l) => l.resource === key)).includes("not-replicated");
    });
  });

  it("shows a node that is itself a replica as one, with no replication hazards on its copies", async () => {
    const w = watch(replica.url);
    watchers.push(w.sources);
    await w.sources.ready;
    const key = `${prefix}:lock:on-replica`;
    await master.client().set(key, "tok-4", "PX", 60_000);
    let polls = 0;
    await waitFor("the copy seen on the replica", async () => {
      await w.poll();
      return w.locks().some((l) => l.resource === key) && ++polls >= 3;
    });
    expect(codes(w.locks().find((l) => l.resource === key))).not.toContain("not-replicated");
    expect(w.sources.sources[0]!.status().nodes).toEqual([
      expect.objectContaining({ id: `redis://127.0.0.1:${replica.port}`, role: "replica", up: true }),
    ]);
  });
});

describe("through the agent process and the dashboard", () => {
  let dashboard: Dashboard;
  let agent: Proc;

  afterAll(() => stopStack({ dashboard, agent }));

  it("shows not-replicated on the lock in /api/locks within a few polls", async () => {
    dashboard = await startDashboard();
    agent = startAgent(dashboard.url, { REDIS_URLS: master.url, COMMAND_TIMEOUT_MS: "500" });
    const key = `${prefix}:lock:via-agent`;
    const find = async () => (await dashboard.allLocks()).locks.find((l) => l.resource === key);
    proxy.cut();
    try {
      await master.client().set(key, "tok-5", "PX", 60_000);
      await waitFor("not-replicated in the API", async () => codes(await find()).includes("not-replicated"), {
        timeoutMs: 20_000,
      });
    } finally {
      proxy.restore();
    }
    await waitFor("cleared in the API", async () => !codes(await find()).includes("not-replicated"), {
      timeoutMs: 20_000,
    });
  });
});
