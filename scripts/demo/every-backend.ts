/**
 * The quick start's demo of every backend, started by scripts/quickstart.sh when no servers are configured:
 * - a Redlock group of five throwaway redis-servers with node-redlock clients, nodes frozen now and then;
 * - a ZooKeeper (when installed) with the seeds' /ParentLock recipe, a Curator-style mutex, a kazoo-style lock and
 *   the seeds' simple lock, waiters queueing;
 * - the seeds' "grab an order" race on the demo redis-server (REDIS_URLS) and the Redlock group.
 * Writes `export REDLOCK_NODES=… ZK_CONNECT=…` to the file named by its argument once the servers answer, for the
 * agent; stops everything it started when it is stopped or when the quick start (LOCKSCOPE_STOP_WITH_PID) is gone.
 */
import { existsSync, writeFileSync } from "node:fs";
import { Redis } from "ioredis";
import { DemoProcesses, stopWithParent, ZOOKEEPER_JAR } from "./demo-processes";
import { startOrderRace } from "./order-race";
import { startRedlockDemo } from "./redlock-group";
import { startZookeeperDemo } from "./zookeeper-locks";

const envFile = process.argv[2];
const log = (line: string) => process.stdout.write(`lockscope demo: ${line}\n`);

async function main(): Promise<void> {
  if (!envFile) throw new Error("usage: every-backend.ts <env file to write>");
  const procs = new DemoProcesses();
  const stops: Array<() => void> = [];
  stopWithParent(() => {
    for (const s of stops.reverse()) s();
    procs.stopAll();
  });

  const nodes = [];
  for (let i = 0; i < 5; i++) nodes.push(await procs.redis()); // one at a time: each takes its own free port
  const redlockNodes = nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(",");
  const env = [`export REDLOCK_NODES=${redlockNodes}`];
  const zk = await procs.zookeeper().catch((err: unknown) => {
    log(`ZooKeeper did not start (${err instanceof Error ? err.message : String(err)}): no ZooKeeper demo`);
    return null;
  });
  if (zk) env.push(`export ZK_CONNECT=127.0.0.1:${zk.port}`);
  else if (!existsSync(ZOOKEEPER_JAR)) {
    log(
      `ZooKeeper is not installed (${ZOOKEEPER_JAR}): add it with "sudo apt-get install -y zookeeper" for a live ZooKeeper page`,
    );
  }
  writeFileSync(envFile, `${env.join("\n")}\n`);
  log(`Redlock group of 5 redis-servers (${redlockNodes}); nodes freeze now and then (at-risk, quorum-lost)`);

  const redlock = startRedlockDemo(nodes);
  stops.push(() => redlock.stop());
  if (zk) {
    const z = await startZookeeperDemo(`127.0.0.1:${zk.port}`);
    stops.push(() => z.stop());
    log(`ZooKeeper on 127.0.0.1:${zk.port}: /ParentLock, a Curator mutex, a kazoo lock and /product-lock-42`);
  }
  const url = (process.env.REDIS_URLS ?? "").split(",")[0]?.trim();
  if (url) {
    const redis = new Redis(url, { maxRetriesPerRequest: 1 });
    redis.on("error", () => undefined); // the demo redis-server stops with the quick start
    const race = startOrderRace(redis, redlock.redlock);
    stops.push(() => {
      race.stop();
      redis.disconnect();
    });
    log(`drivers race for orders (orders:grab-lock:*): SET NX PX, Redisson and Redlock locks, one slow driver`);
  }
}

main().catch((err: unknown) => {
  log(`stopped: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
