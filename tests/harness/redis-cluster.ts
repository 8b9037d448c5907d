import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Cluster, type Redis } from "ioredis";
import { waitFor } from "./ports";
import { startRedis, type RedisServer } from "./redis";

const run = promisify(execFile);

/**
 * Arguments for a server that replicates or is replicated in a test: its own directory (a replica writes the RDB
 * it receives; sharing the working directory would feed one server's keys to the next), and full syncs that
 * start at once instead of after the 5-second diskless delay.
 */
export function replicationArgs(dir: string): string[] {
  return ["--dir", dir, "--repl-diskless-sync-delay", "0"];
}

export interface RedisClusterServers {
  masters: RedisServer[];
  /** replicas[i] replicates masters[replicaOf[i]]. */
  replicas: RedisServer[];
  /** The first master's URL: what the agent is configured with. */
  seedUrl: string;
  /** A cluster-aware client for the test itself (follows MOVED like an application would). */
  client(): Cluster;
  /** The node id (CLUSTER MYID) of a server. */
  nodeId(server: RedisServer): Promise<string>;
  /** Which master serves a key's slot now. */
  masterOf(key: string): Promise<RedisServer>;
  /** Until every live node says cluster_state:ok and agrees who serves each slot. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A real Redis Cluster on free loopback ports: `masters` masters made a cluster by `redis-cli --cluster create`
 * (slots split evenly), then one replica per entry of `replicaOf` (the index of the master it replicates),
 * attached by CLUSTER MEET + CLUSTER REPLICATE so the mapping is the test's choice. Node timeout 2 s.
 */
export async function startRedisCluster(
  opts: { masters?: number; replicaOf?: number[] } = {},
): Promise<RedisClusterServers> {
  const root = mkdtempSync(path.join(tmpdir(), "lockscope-cluster-"));
  const all: RedisServer[] = [];
  const clients: Cluster[] = [];
  // One client per server for the harness's own questions (each server's client() opens a new connection).
  const own = new Map<RedisServer, Redis>();
  const ask = (s: RedisServer) => {
    if (!own.has(s))
      own.set(
        s,
        s.client().on("error", () => undefined),
      ); // a node a test killed refuses: expected
    return own.get(s)!;
  };
  const live = () => all.filter((s) => s.process.exitCode === null && s.process.signalCode === null);
  const start = async (name: string) => {
    const dir = mkdtempSync(path.join(root, `${name}-`));
    const server = await startRedis([
      ...replicationArgs(dir),
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      "nodes.conf",
      "--cluster-node-timeout",
      "2000",
    ]);
    all.push(server);
    return server;
  };
  const stop = async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(all.map((s) => s.stop()));
    rmSync(root, { recursive: true, force: true });
  };
  try {
    const masters = await Promise.all(Array.from({ length: opts.masters ?? 3 }, (_, i) => start(`m${i}`)));
    await run("redis-cli", ["--cluster", "create", ...masters.map((m) => `127.0.0.1:${m.port}`), "--cluster-yes"], {
      timeout: 30_000,
    });
    const nodeId = async (s: RedisServer) => String(await ask(s).call("CLUSTER", "MYID"));
    const replicas: RedisServer[] = [];
    for (const [i, of] of (opts.replicaOf ?? []).entries()) {
      const r = await start(`r${i}`);
      const master = masters[of]!;
      const id = await nodeId(master);
      const c = ask(r);
      await c.call("CLUSTER", "MEET", "127.0.0.1", String(master.port));
      // REPLICATE needs the master known to the new node first: gossip brings it within a heartbeat or two.
      await waitFor(`node ${r.port} learns master ${master.port}`, async () =>
        String(await c.call("CLUSTER", "NODES")).includes(id),
      );
      await c.call("CLUSTER", "REPLICATE", id);
      await waitFor(`replica ${r.port} in sync with ${master.port}`, async () =>
        /master_link_status:up/.test(await c.info("replication")),
      );
      replicas.push(r);
    }
    const cluster: RedisClusterServers = {
      masters,
      replicas,
      seedUrl: masters[0]!.url,
      client() {
        const c = new Cluster([{ host: "127.0.0.1", port: masters[0]!.port }], {
          redisOptions: { maxRetriesPerRequest: 1 },
        });
        c.on("error", () => undefined); // reconnect noise while a test kills a node; commands still fail loudly
        clients.push(c);
        return c;
      },
      nodeId,
      async masterOf(key) {
        for (const s of live()) {
          const role = (await ask(s).call("ROLE")) as unknown[];
          if (role[0] !== "master") continue;
          // A key command on the node that serves the slot answers; any other redirects with MOVED.
          const ok = await ask(s)
            .exists(key)
            .then(() => true)
            .catch(() => false);
          if (ok) return s;
        }
        throw new Error(`no live master serves ${key}`);
      },
      async waitHealthy(timeoutMs = 30_000) {
        await waitFor(
          "cluster_state:ok on every live node",
          async () => {
            const infos = await Promise.all(live().map((s) => ask(s).call("CLUSTER", "INFO")));
            return infos.every((i) => /cluster_state:ok/.test(String(i)));
          },
          { timeoutMs, intervalMs: 100 },
        );
      },
      stop,
    };
    await cluster.waitHealthy();
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}
