import { ConfigError, readInt, readString, type Env } from "../config/env";
import { databaseFileUrl } from "./database-url";

export interface DashboardConfig {
  port: number;
  host: string;
  databaseUrl: string;
  agentToken: string;
  /** Serve the Next.js pages (off for API-only runs such as integration tests). */
  ui: boolean;
}

export function loadDashboardConfig(env: Env = process.env): DashboardConfig {
  const agentToken = readString(env, "AGENT_TOKEN", "");
  if (agentToken === "")
    throw new ConfigError("AGENT_TOKEN", "is required: agents must present it (npm start generates one)");
  if (agentToken.length < 16) throw new ConfigError("AGENT_TOKEN", "must be at least 16 characters");
  let databaseUrl: string;
  try {
    databaseUrl = databaseFileUrl(env.DATABASE_URL);
  } catch (err) {
    throw new ConfigError("DATABASE_URL", err instanceof Error ? err.message.replace(/^DATABASE_URL /, "") : "invalid");
  }
  const ui = readString(env, "LOCKSCOPE_UI", "on");
  if (ui !== "on" && ui !== "off")
    throw new ConfigError("LOCKSCOPE_UI", `expected on or off, got ${JSON.stringify(ui)}`);
  return {
    port: readInt(env, "PORT", 3000, 0, 65535),
    // Loopback unless told otherwise: nothing is open to the network by default.
    host: readString(env, "HOST", "127.0.0.1"),
    databaseUrl,
    agentToken,
    ui: ui === "on",
  };
}
