/**
 * Composition root of the agent: config -> clients -> sources -> loop -> transport.
 * Run alone with `npm run agent` (DASHBOARD_URL, AGENT_TOKEN), or together with the dashboard by `npm start`.
 */
import { randomUUID } from "node:crypto";
import { loadOrExit } from "../lib/config/env";
import { AgentLoop, type WatchedSource } from "./agent";
import { loadAgentConfig } from "./config";
import { connectRedis, IoredisLockPort, IoredisReleasePort } from "./sources/redis/redis-client";
import { RedisSource } from "./sources/redis/redis-source";
import { subscribeKeyspace } from "./sources/redis/keyspace-notifications";
import { NotificationBatcher } from "./sources/redis/notification-batcher";
import { loadRedlockConfig } from "./sources/redlock/redlock-config";
import { createRedlockSources } from "./sources/redlock/redlock-factory";
import { loadZookeeperConfig } from "./sources/zookeeper/zk-config";
import { createZookeeperSource } from "./sources/zookeeper/zookeeper-source";
import { DashboardLink } from "./transport/dashboard-link";

const VERSION = "0.1.0";

function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} agent ${line}\n`);
}

async function main(): Promise<void> {
  const config = loadOrExit("lockscope agent", () => loadAgentConfig());
  const redlockConfig = loadOrExit("lockscope agent", () => loadRedlockConfig(process.env, config.file));
  const zkConfig = loadOrExit("lockscope agent", () => loadZookeeperConfig(process.env));
  const visitBudgetPerPoll = Math.round((config.maxKeyVisitsPerSec * config.pollIntervalMs) / 1000);
  const clients = config.redis.map((target) => {
    const ref: { source?: RedisSource } = {};
    const client = connectRedis({
      url: target.url,
      commandTimeoutMs: config.commandTimeoutMs,
      onStatus: (up, error) => ref.source?.setConnection(up, error),
    });
    const source = (ref.source = new RedisSource(new IoredisLockPort(client), {
      sourceId: target.id,
      agentId: config.agentId,
      lockPatterns: config.lockPatterns,
      scanCount: config.scanCount,
      visitBudgetPerPoll,
      valuePreviewBytes: config.valuePreviewBytes,
      newId: randomUUID,
      maxHoldMs: config.maxHoldMs,
    }));
    return { client, source };
  });
  // Wait for the first connection attempt so a slow handshake is not reported as an outage; a failure is reported
  // by the first poll and retried by ioredis with backoff.
  await Promise.all(clients.map(({ client }) => client.connect().catch(() => undefined)));
  const redlock = createRedlockSources(redlockConfig, {
    agentId: config.agentId,
    newId: randomUUID,
    log,
    lockPatterns: config.lockPatterns,
    commandTimeoutMs: config.commandTimeoutMs,
  });
  await redlock.ready;
  // Keyspace notifications make changes visible in milliseconds; the poll stays the source of truth.
  const subscriptions = await Promise.all(
    clients.map(async ({ source }, i) => {
      const target = config.redis[i]!;
      const batcher = new NotificationBatcher(async (keys) => agent.loop?.push(await source.refreshNotified(keys)));
      const sub = await subscribeKeyspace({
        url: target.url,
        db: target.db,
        patterns: config.lockPatterns,
        mode: config.keyspaceNotifications,
        onKey: (key) => batcher.add(key),
        log,
      });
      if (sub) log(`${target.id}: keyspace notifications ${sub.state}`);
      return { sub, batcher };
    }),
  );
  const redisSources: WatchedSource[] = clients.map(({ client, source }) => ({
    status: () => source.status(),
    poll: () => source.poll(),
    locks: () => source.tracker.locks(),
    has: (id) => source.tracker.has(id),
    release: (cmd) => source.release(cmd, new IoredisReleasePort(client)),
  }));
  // ZooKeeper: child watches make the agent poll sooner when a queue changes; the periodic poll resyncs.
  const zk = zkConfig ? createZookeeperSource(zkConfig, { agentId: config.agentId, newId: randomUUID, log }) : null;
  if (zk) await zk.whenConnected(5000);
  const sources: WatchedSource[] = [...redisSources, ...redlock.sources, ...(zk ? [zk] : [])];
  // The link and the loop refer to each other: the link asks the loop for state, the loop publishes to the link.
  const agent: { loop?: AgentLoop } = {};
  const link = new DashboardLink({
    dashboardUrl: config.dashboardUrl,
    agentToken: config.agentToken,
    agentId: config.agentId,
    agentName: config.agentName,
    version: VERSION,
    bufferEvents: config.bufferEvents,
    sources: () => agent.loop?.statuses() ?? [],
    locks: () => agent.loop?.locks() ?? [],
    log,
    release: (cmd) =>
      agent.loop
        ? agent.loop.release(cmd)
        : Promise.resolve({ outcome: "error", message: "agent starting", plan: [], perNode: [] }),
  });
  const loop = (agent.loop = new AgentLoop(sources, link, {
    agentId: config.agentId,
    pollIntervalMs: config.pollIntervalMs,
    log,
  }));
  const watched = [
    ...config.redis.map((r) => r.id),
    ...redlockConfig.groups.map((g) => `Redlock group ${g.name} (${g.nodes.length} nodes)`),
    ...(zk ? [zk.status().id] : []),
  ];
  log(`watching ${watched.join(", ") || "nothing"}; streaming to ${config.dashboardUrl}`);
  if (zk) zk.setOnChange(() => void loop.pollSource(zk));
  loop.start();

  const shutdown = (signal: string) => {
    log(`${signal}: stopping (${link.pendingEvents} events not yet acknowledged)`);
    loop.stop();
    link.close();
    for (const { client } of clients) client.disconnect();
    redlock.close();
    void zk?.close();
    for (const { sub, batcher } of subscriptions) {
      sub?.close();
      batcher.close();
    }
    process.exit(0);
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

void main();
