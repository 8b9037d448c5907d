/**
 * Addresses the agent learns from servers (replicas in INFO replication, nodes in CLUSTER NODES) and how it dials
 * them. Behind NAT or in containers a node announces an address the agent cannot reach; REDIS_ADDRESS_MAP maps
 * each such announced `host:port` to one that works. Pure.
 */
import { ConfigError } from "../../../lib/config/env";
import { formatAddress } from "./replication-info";

/** `host:port` or `[v6]:port`; null when it is neither. */
export function parseHostPort(text: string): { host: string; port: number } | null {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_.-]+)):(\d{1,5})$/.exec(text.trim());
  if (!m) return null;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return null;
  return { host: (m[1] ?? m[2])!, port };
}

/**
 * REDIS_ADDRESS_MAP entries: `announced=reachable`, where announced is `host:port` as the server prints it and
 * reachable is `host:port` (credentials and database are taken from the configured node's URL) or a full
 * redis:// / rediss:// URL. Example: `10.0.0.7:6379=127.0.0.1:16379,10.0.0.8:6379=redis://:pw@tunnel:6380`.
 */
export function parseAddressMap(variable: string, entries: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of entries) {
    const at = entry.indexOf("=");
    if (at <= 0)
      throw new ConfigError(variable, `expected announced=reachable, got ${JSON.stringify(entry.slice(0, 80))}`);
    const from = parseHostPort(entry.slice(0, at));
    if (!from) throw new ConfigError(variable, `${JSON.stringify(entry.slice(0, at).slice(0, 80))} is not host:port`);
    const to = entry.slice(at + 1).trim();
    if (/^rediss?:\/\//.test(to)) {
      try {
        if (!new URL(to).hostname) throw new Error("no host");
      } catch {
        throw new ConfigError(variable, `${JSON.stringify(to.slice(0, 80))} is not a redis:// URL`);
      }
    } else if (!parseHostPort(to)) {
      throw new ConfigError(variable, `${JSON.stringify(to.slice(0, 80))} is neither host:port nor a redis:// URL`);
    }
    const key = formatAddress(from.host, from.port);
    if (map.has(key)) throw new ConfigError(variable, `${key} is mapped twice`);
    map.set(key, to);
  }
  return map;
}

/**
 * The URL to dial for a node announced at `address`: the mapped URL when the map gives one, else the configured
 * node's URL (scheme, credentials, database) with the announced or mapped host and port. Replicas of a master and
 * nodes of a cluster share its credentials in every setup Redis documents.
 */
export function nodeUrl(address: string, baseUrl: string, map: ReadonlyMap<string, string>): string {
  const mapped = map.get(address);
  if (mapped !== undefined && /^rediss?:\/\//.test(mapped)) return mapped;
  const url = new URL(baseUrl);
  url.host = mapped ?? address;
  return url.toString();
}

/** The id a node is shown by (no credentials, no database): `redis://10.0.0.7:6379`. */
export function nodeId(address: string, baseUrl: string): string {
  return `${new URL(baseUrl).protocol}//${address}`;
}
