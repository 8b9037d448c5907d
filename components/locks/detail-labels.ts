/**
 * Plain words for the lock detail: an operator at 3 a.m. reads "permits held" and a time, not `permitsHeld` and
 * epoch milliseconds. Pure: the zone and the clock are arguments.
 */
import { formatTime, relativeTime, type ZoneChoice } from "../time/format-time";
import { formatDuration } from "./format";

/** Holder fields whose recogniser name is not plain enough once split into words. */
const HOLDER_LABELS: Record<string, string> = {
  permitsHeld: "permits held",
  permitsFree: "permits free",
  permitsTotal: "permits in total",
  permitsExpired: "permits with an ended lease",
  permitsWithoutLease: "permits without a lease",
  nextLeaseEnds: "next lease ends",
  oldestRefreshAt: "oldest refresh",
  acquiredAt: "acquired",
  shortestHoldTtlMs: "shortest lease left",
  lockTimeoutMs: "lock timeout",
  lockTimeoutInferred: "lock timeout inferred",
  readHoldsOfWriter: "read holds of the writer",
  reentrantRaw: "re-entry count (raw)",
  instanceId: "instance id",
  lockName: "lock name",
  nameNote: "about the name",
  uuidVersion: "UUID version",
  identifierSuffix: "identifier suffix",
  threadId: "thread id",
  clientId: "client id",
  sessionId: "session id",
};

/** `permitsHeld` → "permits held"; unknown camelCase, snake_case or kebab-case names are split into words. */
export function holderLabel(key: string): string {
  const known = HOLDER_LABELS[key];
  if (known) return known;
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .toLowerCase();
  return words || key;
}

// Epoch milliseconds between 2001 and 2286: a number in this range under a time-like name is a moment.
const EPOCH_MS_MIN = 1e12;
const EPOCH_MS_MAX = 1e13;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

/**
 * A holder value as a person reads it: times (ISO or epoch ms under an `…At`/`…Ends`/time-like name) in the chosen
 * zone with how long ago, durations (`…Ms`) as "12.5s", booleans as yes/no.
 */
export function holderValue(key: string, value: string | number | boolean, zone: ZoneChoice, now: number): string {
  if (typeof value === "boolean") return value ? "yes" : "no";
  const timeName = /(At|Ends|Time|Since)$/.test(key) || /^(since|at|acquired|expires)$/i.test(key);
  if (typeof value === "string" && ISO_TIME.test(value) && Number.isFinite(Date.parse(value)))
    return `${formatTime(value, zone)} (${relativeTime(value, now)})`;
  if (typeof value === "number" && /Ms$/.test(key) && !timeName) return formatDuration(value);
  if (typeof value === "number" && timeName && value >= EPOCH_MS_MIN && value < EPOCH_MS_MAX)
    return `${formatTime(value, zone)} (${relativeTime(value, now)})`;
  return String(value);
}

/**
 * What to say instead of an empty waiters chart: a plain Redis lock's contenders retry SET NX in their own loop, so
 * nothing on the server shows them waiting (a Redisson fair lock keeps a queue, which is shown). null where waiters
 * can be seen or were measured.
 */
export function waitersNote(
  lock: { backend: string; rule?: string; waiters: readonly unknown[] },
  waitSamples: number,
): string | null {
  if (waitSamples > 0 || lock.waiters.length > 0 || lock.rule === "redisson-fair-lock") return null;
  if (lock.backend === "redis") return "No waiters are visible for plain Redis locks (clients retry).";
  if (lock.backend === "redlock") return "No waiters are visible for Redlock locks (clients retry on every node).";
  return null;
}

/** What the page says for an id the dashboard has never seen (the API answered 404). */
export function unknownLockMessage(id: string): string {
  return `No lock with id ${id} exists: it is not held on any watched source and has no stored history. Check the link, or look for the resource on the locks page.`;
}
