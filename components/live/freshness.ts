import type { SourceStatus } from "@/lib/contract/lock";

/**
 * How fresh what the browser shows is, in words an operator cannot miss. Pure: the connection state and the
 * browser's own clock in, the banner, the clock countdowns should use and per-source staleness out.
 */

export type Connection = "connecting" | "live" | "reconnecting";

/** "12 s ago", "3 min ago", "2 h ago": coarse on purpose, it is read at a glance. */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  return `${Math.floor(s / 3600)} h ago`;
}

export interface LiveFreshness {
  /** The data on screen is not live: dim it and show the banner. */
  stale: boolean;
  banner: string | null;
  /**
   * The time countdowns must use: the real clock while live; frozen at the last update while not, so TTLs do not
   * keep counting down as if the agent still saw the locks.
   */
  clock: number;
}

export function liveFreshness(connection: Connection, lastUpdateAt: number | null, now: number): LiveFreshness {
  if (connection === "live") return { stale: false, banner: null, clock: now };
  if (lastUpdateAt === null) {
    return connection === "connecting"
      ? { stale: false, banner: null, clock: now }
      : { stale: true, banner: "Not connected to the dashboard: nothing received yet. Reconnecting…", clock: now };
  }
  return {
    stale: true,
    banner:
      `Connection to the dashboard lost: last update ${ago(now - lastUpdateAt)}. ` +
      "What you see may be out of date; TTLs are frozen at the last update. Reconnecting…",
    clock: lastUpdateAt,
  };
}

/** A source counts as stale once its last completed read is older than this many poll intervals. */
export const STALE_AFTER_POLLS = 3;
/** How late a poll time may arrive (the agent sends per-poll figures every 2 s, plus the trip): not yet stale. */
export const REFRESH_SLACK_MS = 5000;
/** The agent's default POLL_INTERVAL_MS, for sources that do not report their own. */
export const DEFAULT_POLL_MS = 1000;

export interface SourceFreshness {
  id: string;
  stale: boolean;
  /** Why, for a tooltip or the banner: "down: …", "last read 12 s ago". */
  reason: string | null;
}

/**
 * Per source: down, or its data older than its poll interval allows (the agent stopped reading it, or its link to
 * the dashboard is cut). A source that never reported a read time (an older agent) is judged only by `up`.
 */
export function sourceFreshness(
  s: Pick<SourceStatus, "id" | "up" | "error" | "lastPollAt" | "pollIntervalMs">,
  now: number,
): SourceFreshness {
  if (!s.up) return { id: s.id, stale: true, reason: `down${s.error ? `: ${s.error}` : ""}` };
  const at = s.lastPollAt ? Date.parse(s.lastPollAt) : Number.NaN;
  if (!Number.isFinite(at)) return { id: s.id, stale: false, reason: null };
  const poll = Math.max(100, s.pollIntervalMs ?? DEFAULT_POLL_MS);
  // Poll times reach the browser at most every SOURCES_REFRESH_MS (2 s) on a quiet fleet: never stale before that.
  const limit = Math.max(STALE_AFTER_POLLS * poll, poll + REFRESH_SLACK_MS);
  const age = now - at;
  return age > limit
    ? { id: s.id, stale: true, reason: `last read ${ago(age)}` }
    : { id: s.id, stale: false, reason: null };
}

/** The ids of stale sources, so rows from them can be marked. */
export function staleSourceIds(sources: readonly SourceStatus[], now: number): Set<string> {
  return new Set(
    sources
      .map((s) => sourceFreshness(s, now))
      .filter((f) => f.stale)
      .map((f) => f.id),
  );
}
