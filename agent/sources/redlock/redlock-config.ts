import { ConfigError, readList, type Env } from "../../../lib/config/env";
import { parseRedisTarget, type RedisTarget } from "../../config";

/** One Redlock group: N independent Redis masters that clients lock across. */
export interface RedlockGroupConfig {
  /** Shown as Lock.source and SourceStatus.id. */
  name: string;
  nodes: RedisTarget[];
}

export interface RedlockConfig {
  groups: RedlockGroupConfig[];
}

/** The group REDLOCK_NODES forms. */
export const DEFAULT_GROUP = "default";

/** Fewer than 3 masters tolerates no failure at all (2 nodes need 2 votes), which is not Redlock. */
export const MIN_NODES = 3;

const GROUP_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Redlock groups from `REDLOCK_NODES` (one group named "default") and from the parsed config file's
 * `{ "redlockGroups": [{ "name": "...", "nodes": ["redis://..."] }] }`. Errors name the variable or the file path
 * of the bad entry (`redlockGroups[1].nodes`), so the process stops with one line that says what to fix.
 */
export function loadRedlockConfig(env: Env, fileConfig?: unknown): RedlockConfig {
  const groups: RedlockGroupConfig[] = [];
  const urls = readList(env, "REDLOCK_NODES");
  if (urls !== undefined && urls.length > 0) groups.push(group("REDLOCK_NODES", DEFAULT_GROUP, urls));
  groups.push(...fileGroups(fileConfig));
  const names = new Set<string>();
  for (const g of groups) {
    if (names.has(g.name)) {
      const where = g.name === DEFAULT_GROUP ? "REDLOCK_NODES and redlockGroups" : "redlockGroups";
      throw new ConfigError(where, `group ${JSON.stringify(g.name)} is defined twice`);
    }
    names.add(g.name);
  }
  return { groups };
}

function fileGroups(fileConfig: unknown): RedlockGroupConfig[] {
  if (fileConfig === undefined || fileConfig === null) return [];
  if (typeof fileConfig !== "object" || Array.isArray(fileConfig)) {
    throw new ConfigError("config file", "expected a JSON object at the top level");
  }
  const raw = (fileConfig as Record<string, unknown>).redlockGroups;
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new ConfigError("redlockGroups", "expected an array of { name, nodes }");
  return raw.map((entry: unknown, i) => {
    const where = `redlockGroups[${i}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new ConfigError(where, "expected an object { name, nodes }");
    }
    const { name, nodes } = entry as Record<string, unknown>;
    if (typeof name !== "string") throw new ConfigError(`${where}.name`, "expected a string");
    if (!Array.isArray(nodes) || !nodes.every((n): n is string => typeof n === "string")) {
      throw new ConfigError(`${where}.nodes`, "expected an array of redis:// URLs");
    }
    return group(
      `${where}.nodes`,
      name,
      nodes.map((n) => n.trim()).filter((n) => n !== ""),
      `${where}.name`,
    );
  });
}

function group(variable: string, name: string, urls: string[], nameVariable = variable): RedlockGroupConfig {
  if (!GROUP_NAME.test(name)) {
    throw new ConfigError(
      nameVariable,
      `group name ${JSON.stringify(name.slice(0, 80))}: use 1-64 letters, digits, '.', '_', ':' or '-'`,
    );
  }
  const nodes = urls.map((u) => parseRedisTarget(variable, u));
  if (nodes.length < MIN_NODES) {
    throw new ConfigError(
      variable,
      `a Redlock group needs at least ${MIN_NODES} independent nodes, got ${nodes.length}`,
    );
  }
  const seen = new Set<string>();
  for (const n of nodes) {
    // Two URLs for one server (even with different database numbers) would give one machine two votes.
    const server = n.id.replace(/\/\d+$/, "");
    if (seen.has(server)) throw new ConfigError(variable, `${server} is listed twice`);
    seen.add(server);
  }
  return { name, nodes };
}
