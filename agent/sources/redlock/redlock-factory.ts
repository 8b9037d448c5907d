import type { Redis } from "ioredis";
import type { TrackerOutput } from "../../core/tracker";
import { bcastPrefixes } from "../redis/bcast-prefixes";
import { startTrackedReader, type ClientTracking } from "../redis/client-tracking";
import { connectRedis, IoredisReleasePort } from "../redis/redis-client";
import { IoredisRedlockPort } from "./redlock-client";
import { LeanCompanion } from "../redis/lean-connection";
import type { RedlockConfig } from "./redlock-config";
import { RedlockSource, type RedlockSourceOptions } from "./redlock-source";

export interface RedlockFactoryOptions {
  agentId: string;
  newId: () => string;
  log: (line: string) => void;
  /** SCAN MATCH globs naming lock keys (agent config's lockPatterns); node-redlock values are found anyway. */
  lockPatterns: readonly string[];
  /** Per-node deadline of each poll round, and the clients' command timeout. */
  commandTimeoutMs: number;
  /**
   * REDIS_CHANGE_DETECTION: "track" runs CLIENT TRACKING on each node's reading connection (a redirect connection
   * subscribed to the invalidations, BCAST for LOCK_PATTERNS' literal prefixes), each node on its own and polled
   * in full while its tracking is refused or lost; "poll" (default) re-reads everything at every poll.
   */
  changeDetection?: "track" | "poll";
  /** REDIS_SWEEP_MS: in track mode, each known resource is re-read about this often anyway. */
  sweepMs?: number;
  /** REDIS_SERVER_TIME_BUDGET_PERCENT: share of one core of each node for lockscope's commands; 0 or unset = unlimited. */
  serverTimeBudgetPercent?: number;
  /** Changes seen between polls (announced keys, lease ends) are published through this. */
  push?: (output: TrackerOutput) => void;
  /** Passed through to each source (scan budget, test hooks such as clockOffsetMs). */
  source?: Partial<
    Omit<
      RedlockSourceOptions,
      "group" | "agentId" | "newId" | "lockPatterns" | "nodeTimeoutMs" | "log" | "changeDetection" | "sweepMs" | "push"
    >
  >;
}

export interface RedlockSources {
  /** One per group, in configuration order. */
  sources: RedlockSource[];
  /** Resolves once every node's first connection attempt has finished (connected or failed; failures retry). */
  ready: Promise<void>;
  close(): void;
}

/**
 * One client per node, one source per group; in track mode also each node's CLIENT TRACKING (two more connections
 * per node: the invalidation subscriber and, with BCAST prefixes, an idle announcer). Clients connect in the
 * background; `ready` says when they tried (and, tracking, when its first attempt settled).
 */
export function createRedlockSources(config: RedlockConfig, opts: RedlockFactoryOptions): RedlockSources {
  const clients: Redis[] = [];
  const trackers: ClientTracking[] = [];
  const started: Array<Promise<unknown>> = [];
  const track = opts.changeDetection === "track";
  const prefixes = bcastPrefixes(opts.lockPatterns);
  let closed = false;
  const sources = config.groups.map((group) => {
    // The clients report connection changes to the source, which needs the clients' ports first.
    const holder: { source?: RedlockSource } = {};
    const nodes = group.nodes.map((target) => {
      const client = connectRedis({
        url: target.url,
        commandTimeoutMs: opts.commandTimeoutMs,
        onStatus: (up, error) => holder.source?.setConnection(target.id, up, error),
      });
      clients.push(client);
      // The node's bulk reads travel on a lean connection of their own, tracked with the reader (lean-connection.ts).
      const lean = new LeanCompanion(client, {
        tracked: track,
        commandTimeoutMs: opts.commandTimeoutMs,
        log: opts.log,
      });
      started.push(
        client
          .connect()
          .catch(() => undefined)
          .then(() => {
            if (!track || closed) return;
            // Tracking belongs to the connection that reads the locks: the port's client.
            const tracking = startTrackedReader({
              url: target.url,
              reader: client,
              companion: lean,
              prefixes,
              commandTimeoutMs: opts.commandTimeoutMs,
              onKeys: (keys) => holder.source?.invalidated(target.id, keys),
              onFlush: () => holder.source?.flushed(target.id),
              label: `redlock ${group.name}: node ${target.id}`,
              log: opts.log,
              onMode: (mode, note) => holder.source?.setTracking(target.id, mode, note),
            });
            trackers.push(tracking);
            return tracking.ready;
          }),
      );
      // The writer is used only by an operator's force-release; polls go through the read-only port.
      return { id: target.id, port: new IoredisRedlockPort(client, lean), writer: new IoredisReleasePort(client) };
    });
    holder.source = new RedlockSource(nodes, {
      ...opts.source,
      group: group.name,
      agentId: opts.agentId,
      newId: opts.newId,
      lockPatterns: opts.lockPatterns,
      nodeTimeoutMs: opts.commandTimeoutMs,
      log: opts.log,
      changeDetection: opts.changeDetection ?? "poll",
      ...(opts.sweepMs !== undefined ? { sweepMs: opts.sweepMs } : {}),
      ...(opts.push ? { push: opts.push } : {}),
      serverTimeBudgetFraction: (opts.serverTimeBudgetPercent ?? 0) / 100,
    });
    return holder.source;
  });
  const ready = Promise.all(started).then(() => undefined);
  return {
    sources,
    ready,
    close() {
      closed = true;
      for (const t of trackers) t.close();
      for (const s of sources) s.close();
      for (const c of clients) c.disconnect();
    },
  };
}
