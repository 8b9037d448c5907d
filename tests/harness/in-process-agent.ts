import { newEventId } from "../../agent/core/event-id";
import { expect } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { AgentLoop } from "../../agent/agent";
import { parseRedisTarget } from "../../agent/config";
import { createRedisSources, type RedisSources } from "../../agent/sources/redis/redis-sources";
import { waitFor } from "./ports";

export interface InProcessAgent {
  sources: RedisSources;
  loop: AgentLoop;
  events: LockEvent[];
  log: string[];
  /** Event types seen for one resource, in order. */
  types(resource: string): string[];
  stop(): void;
}

/**
 * The agent's Redis side in the test process against a real server, with its real poll loop (fast) and the
 * events it publishes collected in order: the same code path as `npm run agent`, minus the dashboard link.
 */
export async function startInProcessAgent(
  url: string,
  opts: {
    changeDetection: "track" | "poll";
    pollIntervalMs?: number;
    sweepMs?: number;
    budgetPercent?: number;
    /** REDIS_SCAN_STEP_US; absent: every step asks for COUNT 1000. */
    scanStepUsec?: number;
    lockPatterns?: string[];
    keyspaceNotifications?: "off" | "use";
    /** COMMAND_TIMEOUT_MS; 1000 by default. */
    commandTimeoutMs?: number;
  },
): Promise<InProcessAgent> {
  const events: LockEvent[] = [];
  const log: string[] = [];
  const holder: { loop?: AgentLoop } = {};
  const sources = createRedisSources([parseRedisTarget("REDIS_URLS", url)], {
    agentId: `test-${opts.changeDetection}`,
    newId: newEventId,
    log: (line) => log.push(line),
    lockPatterns: opts.lockPatterns ?? ["*lock*"],
    scanCount: 1000,
    ...(opts.scanStepUsec !== undefined ? { scanStepUsec: opts.scanStepUsec } : {}),
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    maxHoldMs: 0,
    commandTimeoutMs: opts.commandTimeoutMs ?? 1000,
    keyspaceNotifications: opts.keyspaceNotifications ?? "off",
    replicaCheck: false,
    addressMap: new Map(),
    clusterRefreshMs: 1000,
    push: (output) => holder.loop?.push(output),
    changeDetection: opts.changeDetection,
    ...(opts.sweepMs !== undefined ? { sweepMs: opts.sweepMs } : {}),
    serverTimeBudgetPercent: opts.budgetPercent ?? 0,
  });
  const loop = new AgentLoop(
    sources.sources,
    { publish: (evs) => void events.push(...evs) },
    { agentId: `test-${opts.changeDetection}`, pollIntervalMs: opts.pollIntervalMs ?? 200, log: (l) => log.push(l) },
  );
  holder.loop = loop;
  await sources.ready;
  loop.start();
  return {
    sources,
    loop,
    events,
    log,
    types: (resource) => events.filter((e) => e.resource === resource).map((e) => e.type),
    stop() {
      loop.stop();
      sources.close();
    },
  };
}

/**
 * Waits until both agents (the tracking one and the polling one, on the same server) have seen exactly `want` for
 * the resource, then asserts that they agree: every change must give the same events in both modes.
 */
export async function bothSee(
  track: InProcessAgent,
  poll: InProcessAgent,
  resource: string,
  want: string[],
  timeoutMs = 10_000,
): Promise<void> {
  for (const agent of [track, poll]) {
    await waitFor(
      `${want.join(",")} for ${resource} in ${agent === track ? "track" : "poll"} mode`,
      () => JSON.stringify(agent.types(resource)) === JSON.stringify(want),
      { timeoutMs },
    );
  }
  expect(track.types(resource)).toEqual(poll.types(resource));
}
