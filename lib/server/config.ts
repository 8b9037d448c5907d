import { ConfigError, readBool, readHttpUrl, readInt, readList, readString, type Env } from "../config/env";
import { DEFAULT_ALERT_RULES, type AlertRulesConfig } from "./alerts/rules";
import { parseWebhookTargets, type WebhookTarget } from "./alerts/webhooks";
import { loadAuthConfig, type AuthConfig } from "./auth/principals";
import { parseDatabaseUrl, type DatabaseProvider } from "./database-url";

export interface DashboardConfig {
  port: number;
  host: string;
  databaseUrl: string;
  /** sqlite for a file: URL, postgresql for a postgresql:// URL. */
  databaseProvider: DatabaseProvider;
  agentToken: string;
  /** Serve the Next.js pages (off for API-only runs such as integration tests). */
  ui: boolean;
  auth: AuthConfig;
  /** Mark the session cookie Secure (behind TLS): COOKIE_SECURE, by default true when PUBLIC_URL is https. */
  secureCookies: boolean;
  /** HMAC key for session cookies; when unset one is generated and kept next to the SQLite file. */
  sessionSecret: string | null;
  /** Force-release attempts per operator per minute. */
  releasesPerMinute: number;
  alertRules: AlertRulesConfig;
  webhooks: WebhookTarget[];
  /** How long an alert's condition must stay clear before it resolves. */
  alertResolveAfterMs: number;
  /** Where operators open the dashboard, for links in webhook messages. */
  publicUrl: string | null;
  retentionDays: number;
  rollupRetentionDays: number;
  /** Redis shared by several dashboards (socket.io adapter and the alerts leader lock); null for one dashboard. */
  fanoutRedisUrl: string | null;
  /** Lease of the alerts leader lock. */
  leaderLeaseMs: number;
  /**
   * Agents' messages that arrive while the store is writing are coalesced into one write (STORE_GROUP_COMMIT, on by
   * default; off writes each message alone, as before); at most storeWriters such writes at once.
   */
  storeGroupCommit: boolean;
  storeWriters: number;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

export function loadDashboardConfig(env: Env = process.env): DashboardConfig {
  const agentToken = readString(env, "AGENT_TOKEN", "");
  if (agentToken === "")
    throw new ConfigError("AGENT_TOKEN", "is required: agents must present it (npm start generates one)");
  if (agentToken.length < 16) throw new ConfigError("AGENT_TOKEN", "must be at least 16 characters");
  let database: ReturnType<typeof parseDatabaseUrl>;
  try {
    database = parseDatabaseUrl(env.DATABASE_URL);
  } catch (err) {
    throw new ConfigError("DATABASE_URL", err instanceof Error ? err.message.replace(/^DATABASE_URL /, "") : "invalid");
  }
  const ui = readString(env, "LOCKSCOPE_UI", "on");
  if (ui !== "on" && ui !== "off")
    throw new ConfigError("LOCKSCOPE_UI", `expected on or off, got ${JSON.stringify(ui)}`);
  const auth = loadAuthConfig(env);
  // Loopback unless told otherwise; and with no credentials configured, loopback whatever HOST says, so a quick
  // start is never open to the network.
  const host = readString(env, "HOST", "127.0.0.1");
  if (auth.generatedAdmin && !LOOPBACK.has(host)) {
    throw new ConfigError("HOST", `${host} would expose the dashboard, but no USERS or API_TOKENS are configured`);
  }
  const sessionSecret = readString(env, "SESSION_SECRET", "");
  if (sessionSecret && sessionSecret.length < 32)
    throw new ConfigError("SESSION_SECRET", "must be at least 32 characters");
  const publicUrl = env.PUBLIC_URL ? readHttpUrl(env, "PUBLIC_URL", "") : null;
  return {
    port: readInt(env, "PORT", 3000, 0, 65535),
    host,
    databaseUrl: database.url,
    databaseProvider: database.provider,
    agentToken,
    ui: ui === "on",
    auth,
    // Served over https (PUBLIC_URL says so): the cookie must never travel over plain http.
    secureCookies: readBool(env, "COOKIE_SECURE", publicUrl?.startsWith("https:") ?? false),
    sessionSecret: sessionSecret || null,
    releasesPerMinute: readInt(env, "RELEASES_PER_MINUTE", 10, 1, 1000),
    alertRules: {
      maxHoldMs: readInt(env, "ALERT_MAX_HOLD_MS", DEFAULT_ALERT_RULES.maxHoldMs, 0, 30 * 86_400_000),
      maxWaiters: readInt(env, "ALERT_MAX_WAITERS", DEFAULT_ALERT_RULES.maxWaiters, 0, 1_000_000),
      maxWaitMs: readInt(env, "ALERT_MAX_WAIT_MS", DEFAULT_ALERT_RULES.maxWaitMs, 0, 30 * 86_400_000),
      disabled: new Set(readList(env, "ALERT_DISABLED_RULES") ?? []),
    },
    webhooks: parseWebhookTargets(
      (readList(env, "ALERT_WEBHOOK_URLS") ?? []).map((u) => {
        const bare = u.replace(/^slack:/, "");
        readHttpUrl({ ALERT_WEBHOOK_URLS: bare }, "ALERT_WEBHOOK_URLS", bare);
        return u;
      }),
    ),
    alertResolveAfterMs: readInt(env, "ALERT_RESOLVE_AFTER_MS", 30_000, 0, 86_400_000),
    publicUrl,
    retentionDays: readInt(env, "RETENTION_DAYS", 7, 1, 3650),
    rollupRetentionDays: readInt(env, "ROLLUP_RETENTION_DAYS", 90, 1, 3650),
    fanoutRedisUrl: readFanoutUrl(env),
    leaderLeaseMs: readInt(env, "LEADER_LEASE_MS", 10_000, 1000, 600_000),
    storeGroupCommit: readBool(env, "STORE_GROUP_COMMIT", true),
    // SQLite has one writer; PostgreSQL's server work for one write can run on another core during the next.
    storeWriters: readInt(env, "STORE_WRITERS", database.provider === "postgresql" ? 2 : 1, 1, 16),
  };
}

function readFanoutUrl(env: Env): string | null {
  const url = readString(env, "FANOUT_REDIS_URL", "");
  if (url === "") return null;
  if (!/^rediss?:\/\/[^/]/.test(url)) {
    throw new ConfigError(
      "FANOUT_REDIS_URL",
      `expected redis://host:port or rediss://…, got ${JSON.stringify(url.slice(0, 40))}`,
    );
  }
  return url;
}
