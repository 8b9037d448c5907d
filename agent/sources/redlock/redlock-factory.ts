import type { Redis } from "ioredis";
import { connectRedis, IoredisReleasePort } from "../redis/redis-client";
import { IoredisRedlockPort } from "./redlock-client";
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
  /** Passed through to each source (scan budget, test hooks such as clockOffsetMs). */
  source?: Partial<
    Omit<RedlockSourceOptions, "group" | "agentId" | "newId" | "lockPatterns" | "nodeTimeoutMs" | "log">
  >;
}

export interface RedlockSources {
  /** One per group, in configuration order. */
  sources: RedlockSource[];
  /** Resolves once every node's first connection attempt has finished (connected or failed; failures retry). */
  ready: Promise<void>;
  close(): void;
}

/** One client per node, one source per group. Clients connect in the background; `ready` says when they tried. */
export function createRedlockSources(config: RedlockConfig, opts: RedlockFactoryOptions): RedlockSources {
  const clients: Redis[] = [];
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
      // The writer is used only by an operator's force-release; polls go through the read-only port.
      return { id: target.id, port: new IoredisRedlockPort(client), writer: new IoredisReleasePort(client) };
    });
    holder.source = new RedlockSource(nodes, {
      ...opts.source,
      group: group.name,
      agentId: opts.agentId,
      newId: opts.newId,
      lockPatterns: opts.lockPatterns,
      nodeTimeoutMs: opts.commandTimeoutMs,
      log: opts.log,
    });
    return holder.source;
  });
  const ready = Promise.all(clients.map((c) => c.connect().catch(() => undefined))).then(() => undefined);
  return {
    sources,
    ready,
    close() {
      for (const c of clients) c.disconnect();
    },
  };
}
