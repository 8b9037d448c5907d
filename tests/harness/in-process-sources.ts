import { newEventId } from "../../agent/core/event-id";
import { parseRedisTarget } from "../../agent/config";
import { createRedisSources, type RedisSources } from "../../agent/sources/redis/redis-sources";

/**
 * The agent's Redis sources in the test process against a real server or cluster: no pacing, fast cluster
 * refresh, replica checks on, notifications off, so each `poll()` is one full, deterministic pass.
 */
export function inProcessRedisSources(url: string, agentId: string): RedisSources {
  return createRedisSources([parseRedisTarget("REDIS_URLS", url)], {
    agentId,
    newId: newEventId,
    log: () => undefined,
    lockPatterns: ["*lock*"],
    scanCount: 1000,
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    maxHoldMs: 0,
    commandTimeoutMs: 500,
    keyspaceNotifications: "off",
    replicaCheck: true,
    addressMap: new Map(),
    clusterRefreshMs: 1000,
    push: () => undefined,
  });
}
