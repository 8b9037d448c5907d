/**
 * Which optional agent features exist in the checkout being measured: the bench runs against whatever the other
 * engineers have landed, and says what it could not measure instead of failing.
 */
import { loadAgentConfig } from "../../agent/config";

/** The value of KEYSPACE_NOTIFICATIONS that the agent's config accepts, or null when the setting does not exist. */
function accepted(candidates: readonly string[]): string | null {
  // A setting that does not exist accepts anything: check that a nonsense value is refused first.
  const probe = (value: string) => {
    try {
      loadAgentConfig({ AGENT_TOKEN: "probe", REDIS_URLS: "redis://127.0.0.1:1", KEYSPACE_NOTIFICATIONS: value });
      return true;
    } catch {
      return false;
    }
  };
  if (probe("not-a-mode-bench-probe")) return null;
  return candidates.find(probe) ?? null;
}

export interface KeyspaceNotificationSupport {
  available: boolean;
  /** Env value that turns them on (the agent enables the server's flags itself), and the one that turns them off. */
  on: string | null;
  off: string | null;
}

export function keyspaceNotificationSupport(): KeyspaceNotificationSupport {
  const on = accepted(["enable", "on", "true", "1"]);
  const off = accepted(["off", "false", "0"]);
  return { available: on !== null, on, off };
}
