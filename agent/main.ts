/**
 * Composition root of the agent: config -> clients -> sources -> loop -> transport.
 * Run alone with `npm run agent` (DASHBOARD_URL, AGENT_TOKEN), or together with the dashboard by `npm start`.
 */
import { randomUUID } from "node:crypto";
import { loadOrExit } from "../lib/config/env";
import { AgentLoop, type WatchedSource } from "./agent";
import { loadAgentConfig } from "./config";
import { createRedisSources } from "./sources/redis/redis-sources";
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
  // The link and the loop refer to each other: the link asks the loop for state, the loop publishes to the link.
  // Declared first: keyspace notifications may publish through it as soon as the Redis sources are ready.
  const agent: { loop?: AgentLoop } = {};
  // Each configured node is asked whether it is a cluster node: a cluster is watched master by master.
  const redis = createRedisSources(config.redis, {
    agentId: config.agentId,
    newId: randomUUID,
    log,
    lockPatterns: config.lockPatterns,
    scanCount: config.scanCount,
    visitBudgetPerPoll,
    valuePreviewBytes: config.valuePreviewBytes,
    maxHoldMs: config.maxHoldMs,
    hazardMemoryMs: config.hazardMemoryMs,
    commandTimeoutMs: config.commandTimeoutMs,
    keyspaceNotifications: config.keyspaceNotifications,
    replicaCheck: config.replicaCheck,
    addressMap: config.redisAddressMap,
    clusterRefreshMs: config.clusterRefreshMs,
    push: (output) => agent.loop?.push(output),
    changeDetection: config.changeDetection,
    sweepMs: config.sweepMs,
    serverTimeBudgetPercent: config.serverTimeBudgetPercent,
  });
  // Wait for the first connection attempt so a slow handshake is not reported as an outage; a failure is reported
  // by the first poll and retried by ioredis with backoff.
  await redis.ready;
  const redlock = createRedlockSources(redlockConfig, {
    agentId: config.agentId,
    newId: randomUUID,
    log,
    lockPatterns: config.lockPatterns,
    commandTimeoutMs: config.commandTimeoutMs,
  });
  await redlock.ready;
  // ZooKeeper: child watches make the agent poll sooner when a queue changes; the periodic poll resyncs.
  const zk = zkConfig ? createZookeeperSource(zkConfig, { agentId: config.agentId, newId: randomUUID, log }) : null;
  if (zk) await zk.whenConnected(5000);
  const sources: WatchedSource[] = [...redis.sources, ...redlock.sources, ...(zk ? [zk] : [])];
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
    maxLocksPerSource: config.maxLocksPerSource,
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
    redis.close();
    redlock.close();
    void zk?.close();
    process.exit(0);
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

main().catch((err: unknown) => {
  process.stderr.write(`lockscope agent: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
