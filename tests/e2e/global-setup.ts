import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard } from "../harness/stack";
import { startZookeeper } from "../harness/zookeeper";

/**
 * One real stack for the browser tests, all on free loopback ports: a redis-server, five more forming a Redlock
 * group, a ZooKeeper, the dashboard with its built pages, and one agent watching all of them. Tests find them
 * through the environment variables set here.
 */
export default async function globalSetup(): Promise<() => Promise<void>> {
  const redis = await startRedis();
  const redlockNodes: RedisServer[] = [];
  for (let i = 0; i < 5; i++) redlockNodes.push(await startRedis());
  const zk = await startZookeeper();
  const dashboard = await startDashboard({ ui: true, env: { ALERT_RESOLVE_AFTER_MS: "1000" } });
  const agent = startAgent(dashboard.url, {
    REDIS_URLS: redis.url,
    REDLOCK_NODES: redlockNodes.map((n) => n.url).join(","),
    ZK_CONNECT: zk.connect,
    ZK_RESYNC_MS: "5000",
    POLL_INTERVAL_MS: "250",
  });
  process.env.E2E_BASE_URL = dashboard.url;
  process.env.E2E_REDIS_PORT = String(redis.port);
  process.env.E2E_REDLOCK_PORTS = redlockNodes.map((n) => n.port).join(",");
  /** PIDs let a test freeze (SIGSTOP) and thaw (SIGCONT) a Redlock node. */
  process.env.E2E_REDLOCK_PIDS = redlockNodes.map((n) => n.process.pid).join(",");
  process.env.E2E_ZK_CONNECT = zk.connect;
  return async () => {
    await agent.stop();
    await dashboard.stop();
    dashboard.cleanup();
    for (const n of [redis, ...redlockNodes]) await n.stop();
    await zk.stop();
  };
}
