import { ConfigError, readList, type Env } from "../../../lib/config/env";
import { loadDbLockSettings, type DbLockSettings } from "../db-lock-settings";

export interface MysqlTarget {
  /** `mysql://host:port` (never credentials). User-level locks are server-wide, so one source per server. */
  id: string;
  url: string;
}

export interface MysqlConfig {
  targets: MysqlTarget[];
  settings: DbLockSettings;
}

export function parseMysqlTarget(variable: string, raw: string): MysqlTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(variable, `not a URL: ${JSON.stringify(raw.slice(0, 80))} (expected mysql://user@host:port)`);
  }
  if (url.protocol !== "mysql:" && url.protocol !== "mariadb:") {
    throw new ConfigError(variable, `expected mysql:// or mariadb://, got ${JSON.stringify(url.protocol)}`);
  }
  if (!url.hostname) throw new ConfigError(variable, `no host in ${JSON.stringify(raw.slice(0, 80))}`);
  // mysql2 reads only mysql:// URLs; mariadb:// is accepted as the same thing.
  return { id: `mysql://${url.hostname}:${url.port || "3306"}`, url: raw.replace(/^mariadb:/, "mysql:") };
}

/** MYSQL_URLS, each server once; null when not set. */
export function loadMysqlConfig(env: Env): MysqlConfig | null {
  const urls = readList(env, "MYSQL_URLS");
  if (!urls || urls.length === 0) return null;
  const targets = urls.map((u) => parseMysqlTarget("MYSQL_URLS", u));
  const ids = new Set<string>();
  for (const t of targets) {
    if (ids.has(t.id)) throw new ConfigError("MYSQL_URLS", `${t.id} is listed twice`);
    ids.add(t.id);
  }
  return { targets, settings: loadDbLockSettings(env) };
}
