import { ConfigError, readList, type Env } from "../../../lib/config/env";
import { loadDbLockSettings, type DbLockSettings } from "../db-lock-settings";

export interface PgTarget {
  /** `postgresql://host:port`: what the dashboard shows (never credentials). One server, all its databases. */
  id: string;
  /** The URL to connect with (may carry credentials; never sent to the dashboard). */
  url: string;
}

export interface PostgresConfig {
  targets: PgTarget[];
  settings: DbLockSettings;
}

export function parsePgTarget(variable: string, raw: string): PgTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      variable,
      `not a URL: ${JSON.stringify(raw.slice(0, 80))} (expected postgresql://host:port/db)`,
    );
  }
  if (url.protocol !== "postgresql:" && url.protocol !== "postgres:") {
    throw new ConfigError(variable, `expected postgresql:// or postgres://, got ${JSON.stringify(url.protocol)}`);
  }
  if (!url.hostname) throw new ConfigError(variable, `no host in ${JSON.stringify(raw.slice(0, 80))}`);
  return { id: `postgresql://${url.hostname}:${url.port || "5432"}`, url: raw };
}

/** POSTGRES_URLS, each server once; null when not set. */
export function loadPostgresConfig(env: Env): PostgresConfig | null {
  const urls = readList(env, "POSTGRES_URLS");
  if (!urls || urls.length === 0) return null;
  const targets = urls.map((u) => parsePgTarget("POSTGRES_URLS", u));
  const ids = new Set<string>();
  for (const t of targets) {
    if (ids.has(t.id))
      throw new ConfigError(
        "POSTGRES_URLS",
        `${t.id} is listed twice (one connection sees every database of a server)`,
      );
    ids.add(t.id);
  }
  return { targets, settings: loadDbLockSettings(env) };
}
