import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import {
  ConfigError,
  readBool,
  readEnum,
  readHttpUrl,
  readInt,
  readList,
  readString,
  type Env,
} from "../lib/config/env";
import { parseAddressMap } from "./sources/redis/node-address";

/** Lock keys are found by these SCAN MATCH globs (case variants folded into character classes). */
/**
 * REDIS_SERVER_TIME_BUDGET_PERCENT's default: the share of one core of each watched Redis that lockscope's commands
 * may use. 0.7, not 1: the server also spends about 0.15 to 0.2% of a core on its own background work (serverCron,
 * active expiry) with no agent attached, which the budget cannot pace; at 1% the server's total share came out at
 * 1.11 to 1.16% in the bench (BENCHMARKS.md, issue 11), over the 1% an SRE is promised.
 */
export const DEFAULT_SERVER_TIME_BUDGET_PERCENT = 0.7;

/**
 * REDIS_SCAN_STEP_US's default. While the server-time budget paces a SCAN pass, each step's COUNT is sized so that
 * the step takes about this long on the server: another client's command that arrives during a step waits for it.
 * A paced COUNT 1000 step took about 1 ms at 1,000,000 keys and 1.5 to 4.2 ms at 10,000,000; sized, another client's
 * GET p99.9 rose by 0.08 and 0.32 ms instead of 0.43 ms, for a pass 0.9 to 1.3 times as long (BENCHMARKS.md, issue 11).
 */
export const DEFAULT_SCAN_STEP_US = 250;

export const DEFAULT_LOCK_PATTERNS = [
  "*[lL][oO][cC][kK]*",
  "mutex:*",
  "*[mM][uU][tT][eE][xX]*",
  "semaphore:*",
  "*[sS][eE][mM][aA][pP][hH][oO][rR][eE]*",
];

export interface RedisTarget {
  /** The URL with any password removed: what the dashboard shows as the source. */
  id: string;
  /** The database number (for keyspace notification channels). */
  db: number;
  /** The URL to connect with (may carry credentials; never sent to the dashboard). */
  url: string;
}

export interface AgentConfig {
  agentId: string;
  agentName: string;
  dashboardUrl: string;
  agentToken: string;
  redis: RedisTarget[];
  lockPatterns: string[];
  pollIntervalMs: number;
  scanCount: number;
  /**
   * REDIS_SCAN_STEP_US: the server time a paced SCAN step aims at (its COUNT sized to it, at most SCAN_COUNT);
   * 0 = SCAN_COUNT always.
   */
  scanStepUsec: number;
  /** Key visits per second per Redis node (a SCAN COUNT n costs n, each read 1); 0 = unlimited. */
  maxKeyVisitsPerSec: number;
  valuePreviewBytes: number;
  /**
   * Events kept while the dashboard is unreachable; the oldest are dropped (and counted) beyond it. While it is
   * connected, up to 4 times that (event-buffer.ts: a first poll of many locks is that many events at once).
   */
  bufferEvents: number;
  commandTimeoutMs: number;
  /** How long takeover and zombie hazards stay on a lock after they happened. */
  hazardMemoryMs: number;
  /** Keyspace notifications: off, use (subscribe if the server publishes them), enable (turn them on: opt-in). */
  keyspaceNotifications: "off" | "use" | "enable";
  /** Longest an operator expects a lock to be held before it is flagged (held-too-long / zombie-renewal); 0 = off. */
  maxHoldMs: number;
  /** REDIS_REPLICA_CHECK: connect to each master's replicas and flag locks not replicated yet. */
  replicaCheck: boolean;
  /** REDIS_ADDRESS_MAP: announced `host:port` of replicas and cluster nodes -> reachable host:port or URL. */
  redisAddressMap: Map<string, string>;
  /** REDIS_CLUSTER_REFRESH_MS: how often a cluster's topology is re-read when nothing prompts it sooner. */
  clusterRefreshMs: number;
  /** MAX_LOCKS_PER_SOURCE: locks published per source before "showing N of M" and a too-many-locks hazard. */
  maxLocksPerSource: number;
  /** REDIS_CHANGE_DETECTION: track (server-assisted client tracking, polling as the fallback) or poll. */
  changeDetection: "track" | "poll";
  /** REDIS_SWEEP_MS: in track mode, each known lock is re-read about this often even when nothing announced it. */
  sweepMs: number;
  /** REDIS_SERVER_TIME_BUDGET_PERCENT: share of one core of each watched Redis for lockscope's commands; 0 = no limit. */
  serverTimeBudgetPercent: number;
  /** The parsed JSON of LOCKSCOPE_CONFIG (Redlock groups and other settings too long for a variable), or null. */
  file: Record<string, unknown> | null;
}

/** LOCKSCOPE_CONFIG: path to a JSON file; its absence is fine, a broken one stops the agent with one line. */
export function readConfigFile(env: Env): Record<string, unknown> | null {
  const path = readString(env, "LOCKSCOPE_CONFIG", "");
  if (!path) return null;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(
      "LOCKSCOPE_CONFIG",
      `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      "LOCKSCOPE_CONFIG",
      `${path} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError("LOCKSCOPE_CONFIG", `${path} must hold a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/** A percentage with decimals (0.5 is a fair budget on a busy server), 0 to 100. */
function readPercent(env: Env, name: string, fallback: number): number {
  const v = env[name]?.trim();
  if (v === undefined || v === "") return fallback;
  if (!/^\d+(?:\.\d+)?$/.test(v))
    throw new ConfigError(name, `expected a percentage such as 1 or 0.5, got ${JSON.stringify(v.slice(0, 40))}`);
  const n = Number(v);
  if (n > 100) throw new ConfigError(name, `must be between 0 and 100, got ${n}`);
  return n;
}

export function parseRedisTarget(variable: string, raw: string): RedisTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(variable, `not a URL: ${JSON.stringify(raw.slice(0, 80))} (expected redis://host:port)`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new ConfigError(variable, `expected redis:// or rediss://, got ${JSON.stringify(url.protocol)}`);
  }
  if (!url.hostname) throw new ConfigError(variable, `no host in ${JSON.stringify(raw.slice(0, 80))}`);
  const db = url.pathname.replace(/^\//, "") || "0";
  if (!/^\d{1,3}$/.test(db)) throw new ConfigError(variable, `database must be a number, got ${JSON.stringify(db)}`);
  const port = url.port || "6379";
  return { id: `${url.protocol}//${url.hostname}:${port}/${db}`, url: raw, db: Number(db) };
}

/** REDIS_URLS, each node once; the local default when the variable is not set. */
export function loadRedisTargets(env: Env): RedisTarget[] {
  const redisUrls = readList(env, "REDIS_URLS") ?? ["redis://127.0.0.1:6379"];
  const redis = redisUrls.map((u) => parseRedisTarget("REDIS_URLS", u));
  const ids = new Set<string>();
  for (const r of redis) {
    if (ids.has(r.id)) throw new ConfigError("REDIS_URLS", `${r.id} is listed twice`);
    ids.add(r.id);
  }
  return redis;
}

export function loadAgentConfig(env: Env = process.env): AgentConfig {
  const port = readInt(env, "PORT", 3000, 1, 65535);
  const redis = loadRedisTargets(env);
  const lockPatterns = readList(env, "LOCK_PATTERNS") ?? DEFAULT_LOCK_PATTERNS;
  if (lockPatterns.length === 0) throw new ConfigError("LOCK_PATTERNS", "is set but names no pattern");
  const agentToken = readString(env, "AGENT_TOKEN", "");
  if (agentToken === "")
    throw new ConfigError("AGENT_TOKEN", "is required: the dashboard accepts only agents that present it");
  const host = hostname();
  const agentId = readString(env, "AGENT_ID", host.replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 100) || "agent");
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(agentId))
    throw new ConfigError("AGENT_ID", "use letters, digits, '.', '_' or '-'");
  return {
    agentId,
    agentName: readString(env, "AGENT_NAME", agentId),
    dashboardUrl: readHttpUrl(env, "DASHBOARD_URL", `http://127.0.0.1:${port}`),
    agentToken,
    redis,
    lockPatterns,
    pollIntervalMs: readInt(env, "POLL_INTERVAL_MS", 1000, 100, 600_000),
    scanCount: readInt(env, "SCAN_COUNT", 1000, 10, 100_000),
    scanStepUsec: readInt(env, "REDIS_SCAN_STEP_US", DEFAULT_SCAN_STEP_US, 0, 1_000_000),
    maxKeyVisitsPerSec: readInt(env, "MAX_KEY_VISITS_PER_SEC", 100_000, 0, 100_000_000),
    valuePreviewBytes: readInt(env, "VALUE_PREVIEW_BYTES", 256, 16, 65_536),
    bufferEvents: readInt(env, "AGENT_BUFFER_EVENTS", 50_000, 100, 10_000_000),
    commandTimeoutMs: readInt(env, "COMMAND_TIMEOUT_MS", 2000, 50, 60_000),
    hazardMemoryMs: readInt(env, "HAZARD_MEMORY_MS", 5 * 60_000, 1000, 86_400_000),
    keyspaceNotifications: readEnum(env, "KEYSPACE_NOTIFICATIONS", ["off", "use", "enable"] as const, "use"),
    maxHoldMs: readInt(env, "LOCK_MAX_HOLD_MS", 15 * 60_000, 0, 30 * 86_400_000),
    replicaCheck: readBool(env, "REDIS_REPLICA_CHECK", true),
    redisAddressMap: parseAddressMap("REDIS_ADDRESS_MAP", readList(env, "REDIS_ADDRESS_MAP") ?? []),
    clusterRefreshMs: readInt(env, "REDIS_CLUSTER_REFRESH_MS", 10_000, 1000, 600_000),
    maxLocksPerSource: readInt(env, "MAX_LOCKS_PER_SOURCE", 200_000, 1, 10_000_000),
    changeDetection: readEnum(env, "REDIS_CHANGE_DETECTION", ["track", "poll"] as const, "track"),
    sweepMs: readInt(env, "REDIS_SWEEP_MS", 60_000, 1000, 86_400_000),
    serverTimeBudgetPercent: readPercent(env, "REDIS_SERVER_TIME_BUDGET_PERCENT", DEFAULT_SERVER_TIME_BUDGET_PERCENT),
    file: readConfigFile(env),
  };
}
