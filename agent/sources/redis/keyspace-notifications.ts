import { Redis } from "ioredis";

export type NotificationMode = "off" | "use" | "enable";

/**
 * Flags lockscope needs in notify-keyspace-events: K (keyspace channel), g (DEL, EXPIRE, RENAME...), $ (strings),
 * h (hashes), z (sorted sets), l (lists), x (expired), e (evicted).
 */
const NEEDED = "Kg$hzlxe";

/**
 * Which flags to set so the server publishes what lockscope needs, keeping what is already on; null when the
 * current setting suffices. Sample of CONFIG GET notify-keyspace-events: ["notify-keyspace-events", "xE"].
 * "A" stands for "g$lshzxetd".
 */
export function flagsToEnable(current: string): string | null {
  const have = new Set(current.replace("A", "g$lshzxetd").split(""));
  if (have.has("K") && [..."g$hzlxe"].every((f) => have.has(f))) return null;
  const merged = new Set([...current.split(""), ...NEEDED.split("")]);
  return [...merged].join("");
}

/** Whether the setting publishes keyspace events for lock changes at all (K plus at least generic or string). */
export function publishesLockChanges(current: string): boolean {
  return current.includes("K") && /[Ag$h]/.test(current);
}

export interface KeyspaceSubscription {
  /** What the agent found and did, for its log. */
  state: string;
  close(): void;
}

/**
 * Subscribes to keyspace notifications for the lock patterns only (PSUBSCRIBE filters on the server, so a busy
 * server sends just lock-key changes), on a connection of its own as Redis requires for subscribers.
 * "use" subscribes and relies on the server's setting; "enable" first adds the flags it needs (an explicit opt-in:
 * it changes the server's configuration, the one setting lockscope ever changes).
 */
export async function subscribeKeyspace(opts: {
  url: string;
  db: number;
  patterns: readonly string[];
  mode: NotificationMode;
  onKey: (key: Buffer) => void;
  log: (line: string) => void;
}): Promise<KeyspaceSubscription | null> {
  if (opts.mode === "off") return null;
  const sub = new Redis(opts.url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectionName: "lockscope-agent-notifications",
    retryStrategy: (times) => Math.min(500 * 2 ** Math.min(times, 6), 30_000),
  });
  sub.on("error", () => undefined); // the poll reports the node's health; a subscriber error only costs latency
  let state: string;
  try {
    await sub.connect();
    let current: string | null = null;
    try {
      const reply = (await sub.config("GET", "notify-keyspace-events")) as string[];
      current = reply[1] ?? "";
    } catch {
      current = null; // CONFIG is often renamed or disabled on managed Redis: subscribe anyway
    }
    if (opts.mode === "enable" && current !== null) {
      const flags = flagsToEnable(current);
      if (flags !== null) {
        await sub.config("SET", "notify-keyspace-events", flags);
        opts.log(`notify-keyspace-events was "${current}", set to "${flags}" (KEYSPACE_NOTIFICATIONS=enable)`);
        current = flags;
      }
    }
    state =
      current === null
        ? "subscribed (server setting unknown: CONFIG GET refused)"
        : publishesLockChanges(current)
          ? `subscribed (notify-keyspace-events "${current}")`
          : `subscribed, but the server publishes nothing useful (notify-keyspace-events "${current}"); polling only until it does`;
    const prefix = `__keyspace@${opts.db}__:`;
    sub.on("pmessageBuffer", (_pattern: Buffer, channel: Buffer) => {
      opts.onKey(channel.subarray(Buffer.byteLength(prefix)));
    });
    await sub.psubscribe(...opts.patterns.map((p) => `${prefix}${p}`));
  } catch (err) {
    sub.disconnect();
    opts.log(`keyspace notifications unavailable: ${err instanceof Error ? err.message : String(err)}; polling only`);
    return null;
  }
  return { state, close: () => sub.disconnect() };
}
