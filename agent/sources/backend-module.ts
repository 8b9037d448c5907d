/**
 * One shape for every backend, so the composition root composes them from configuration uniformly. A backend is a
 * folder under agent/sources/ that exports one BackendModule; agent/sources/backends.ts lists them.
 */
import type { Env } from "../../lib/config/env";
import type { Backend } from "../../lib/contract/lock";
import type { AgentConfig } from "../config";
import type { TrackerOutput } from "../core/tracker";
import type { WatchedSource } from "./source-port";

/** What every backend gets from the agent. */
export interface BackendDeps {
  /** Agent-wide settings: id, timeouts, hold limits, lock patterns, the parsed LOCKSCOPE_CONFIG file. */
  agent: AgentConfig;
  newId: () => string;
  log: (line: string) => void;
  /** Publishes changes a source saw between polls (keyspace notifications). */
  push: (output: TrackerOutput) => void;
  /** Asks the loop to poll this source now, outside the cycle (a ZooKeeper watch fired). */
  pollSoon: (source: WatchedSource) => void;
}

/** The running backend: its sources, when they have tried to connect, and how to stop them. */
export interface BackendInstance {
  sources: WatchedSource[];
  /** Settles once the first connection attempts have finished (connected or failed; failures are retried). */
  ready: Promise<void>;
  /** What the agent's start-up line names as watched (never credentials). */
  watched: string[];
  close(): void | Promise<void>;
}

export interface BackendModule<C> {
  name: Backend;
  /** The backend's configuration from the environment and the config file; null when it is not configured. */
  load(env: Env, file: Record<string, unknown> | null): C | null;
  create(config: C, deps: BackendDeps): BackendInstance;
}
