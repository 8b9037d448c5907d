import { startRedis } from "../harness/redis";
import { startAgent, startDashboard } from "../harness/stack";

/**
 * One real stack for the browser tests: a redis-server, the dashboard with its built pages, and an agent, all on
 * free loopback ports. Tests find them through the environment variables set here.
 */
export default async function globalSetup(): Promise<() => Promise<void>> {
  const redis = await startRedis();
  const dashboard = await startDashboard({ ui: true });
  const agent = startAgent(dashboard.url, { REDIS_URLS: redis.url, POLL_INTERVAL_MS: "250" });
  process.env.E2E_BASE_URL = dashboard.url;
  process.env.E2E_REDIS_PORT = String(redis.port);
  return async () => {
    await agent.stop();
    await dashboard.stop();
    dashboard.cleanup();
    await redis.stop();
  };
}
