import type { RedisTarget } from "../../config";
import { loadRedisTargets } from "../../config";
import type { BackendModule } from "../backend-module";
import { createRedisSources } from "./redis-sources";

/** REDIS_URLS: each configured node is asked whether it is a cluster node; a cluster is watched master by master. */
export const redisBackend: BackendModule<RedisTarget[]> = {
  name: "redis",
  load: (env) => loadRedisTargets(env),
  create(targets, deps) {
    const a = deps.agent;
    const redis = createRedisSources(targets, {
      agentId: a.agentId,
      newId: deps.newId,
      log: deps.log,
      lockPatterns: a.lockPatterns,
      scanCount: a.scanCount,
      scanStepUsec: a.scanStepUsec,
      visitBudgetPerPoll: Math.round((a.maxKeyVisitsPerSec * a.pollIntervalMs) / 1000),
      valuePreviewBytes: a.valuePreviewBytes,
      maxHoldMs: a.maxHoldMs,
      hazardMemoryMs: a.hazardMemoryMs,
      commandTimeoutMs: a.commandTimeoutMs,
      keyspaceNotifications: a.keyspaceNotifications,
      replicaCheck: a.replicaCheck,
      addressMap: a.redisAddressMap,
      clusterRefreshMs: a.clusterRefreshMs,
      push: deps.push,
      changeDetection: a.changeDetection,
      sweepMs: a.sweepMs,
      serverTimeBudgetPercent: a.serverTimeBudgetPercent,
    });
    // `ready` waits for the first connection attempt so a slow handshake is not reported as an outage; a failure is
    // reported by the first poll and retried by ioredis with backoff.
    return { ...redis, watched: targets.map((t) => t.id) };
  },
};
