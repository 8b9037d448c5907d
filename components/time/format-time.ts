/**
 * One way to show a time everywhere: `2026-12-01 10:04:05 CET` in the browser's zone with the zone named, or in
 * UTC when the user chose it, and relative times ("in 34 s", "5 m ago") where people think relatively. Pure: the
 * zone and the clock are arguments.
 */

export type ZoneChoice = "local" | "utc";

const pad = (n: number) => String(n).padStart(2, "0");

/** The browser's zone abbreviation (CET, GMT+1, …) for a moment, from Intl; "local" when Intl has none. */
export function localZoneName(ms: number, timeZone?: string): string {
  try {
    const parts = new Intl.DateTimeFormat("en-GB", { timeZoneName: "short", ...(timeZone ? { timeZone } : {}) })
      .formatToParts(new Date(ms))
      .find((p) => p.type === "timeZoneName");
    return parts?.value ?? "local";
  } catch {
    return "local";
  }
}

/** Date and time parts of `ms` in the zone (IANA name) or the runtime's local zone. */
function partsOf(ms: number, zone: ZoneChoice, timeZone?: string): Record<string, string> {
  const fmt = new Intl.DateTimeFormat("en-CA", {
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    ...(zone === "utc" ? { timeZone: "UTC" } : timeZone ? { timeZone } : {}),
  });
  return Object.fromEntries(fmt.formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
}

/**
 * `2026-12-01 10:04:05 CET`, or `… UTC`; "—" for a missing or unreadable time. `timeZone` is for tests (the
 * browser's own zone otherwise).
 */
export function formatTime(at: string | number | null | undefined, zone: ZoneChoice, timeZone?: string): string {
  if (at === null || at === undefined) return "—";
  const ms = typeof at === "number" ? at : Date.parse(at);
  if (!Number.isFinite(ms)) return "—";
  const p = partsOf(ms, zone, timeZone);
  const name = zone === "utc" ? "UTC" : localZoneName(ms, timeZone);
  return `${p.year}-${p.month}-${p.day} ${pad(Number(p.hour))}:${p.minute}:${p.second} ${name}`;
}

/** "in 34 s", "5 m ago", "just now", "in 2 h", "3 d ago". */
export function relativeTime(at: string | number | null | undefined, now: number): string {
  if (at === null || at === undefined) return "—";
  const ms = typeof at === "number" ? at : Date.parse(at);
  if (!Number.isFinite(ms)) return "—";
  const diff = ms - now;
  const abs = Math.abs(diff);
  if (abs < 1000) return "just now";
  let text: string;
  if (abs < 60_000) text = `${Math.floor(abs / 1000)} s`;
  else if (abs < 3_600_000) text = `${Math.floor(abs / 60_000)} m`;
  else if (abs < 86_400_000) text = `${Math.floor(abs / 3_600_000)} h`;
  else text = `${Math.floor(abs / 86_400_000)} d`;
  return diff > 0 ? `in ${text}` : `${text} ago`;
}

/** Where the user's choice is remembered: per user name, so a shared browser keeps each operator's own. */
export function zoneStorageKey(user: string | null): string {
  return `lockscope.time-zone.${user ?? "anonymous"}`;
}

export function parseZoneChoice(stored: string | null): ZoneChoice {
  return stored === "utc" ? "utc" : "local";
}

/** How far the zone's wall clock is ahead of UTC at `ms` (0 for UTC), so axis ticks fall on whole local minutes. */
export function zoneOffsetMs(ms: number, zone: ZoneChoice, timeZone?: string): number {
  if (zone === "utc") return 0;
  const p = partsOf(ms, zone, timeZone);
  const wall = Date.UTC(
    Number(p.year),
    Number(p.month) - 1,
    Number(p.day),
    Number(p.hour) % 24,
    Number(p.minute),
    Number(p.second),
  );
  return wall - Math.floor(ms / 1000) * 1000;
}

/**
 * A short form of the one format for axis ticks, whose zone is named once beside the axis: `10:04:05`, `10:04`,
 * `12-01 10:00` or `12-01`.
 */
export function formatClock(
  ms: number,
  zone: ZoneChoice,
  show: "seconds" | "minutes" | "date-minutes" | "date",
  timeZone?: string,
): string {
  const p = partsOf(ms, zone, timeZone);
  const hm = `${pad(Number(p.hour) % 24)}:${p.minute}`;
  if (show === "seconds") return `${hm}:${p.second}`;
  if (show === "minutes") return hm;
  if (show === "date-minutes") return `${p.month}-${p.day} ${hm}`;
  return `${p.month}-${p.day}`;
}
