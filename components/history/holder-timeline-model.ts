/**
 * The holders timeline of one lock (pure): the window's holdings (from the history API, in any order) become one
 * lane per holder, the latest `maxLanes` holders drawn and the earlier ones counted, with bars placed in percent of
 * the axis, a text equivalent per bar, axis ticks in the user's time format and a marker for now. The zone and the
 * clock are arguments.
 */
import type { ResourceHistory } from "@/lib/contract/alerts";
import { formatDuration } from "../locks/format";
import { formatClock, formatTime, localZoneName, zoneOffsetMs, type ZoneChoice } from "../time/format-time";

export type Holding = ResourceHistory["timeline"][number];

export interface TimelineOptions {
  /** The window's start and the moment now (epoch ms). */
  start: number;
  now: number;
  zone: ZoneChoice;
  /** IANA zone for tests; the browser's own otherwise. */
  timeZone?: string;
  /** Lanes drawn at most; the earlier holders are counted ("+M earlier"). */
  maxLanes?: number;
  maxTicks?: number;
  /** Fit the axis to the drawn holdings (the default) instead of the whole window. */
  fit?: boolean;
  /** How many holdings the window had (the API lists only the latest of them). */
  total?: number;
  /**
   * The holders seen live now: one whose acquire came before the window (so no event of the window shows it) is
   * drawn as a holding still in progress from the window's start.
   */
  live?: ReadonlyArray<{ owner: string | null; since?: string | null }>;
}

export type BarEnd = "released" | "expired" | "taken-over" | "handed-over" | "lost" | "holding" | "other";

export interface TimelineBar {
  from: number;
  /** The end of the holding, or now for one still in progress. */
  to: number;
  open: boolean;
  /** It began before the window: the bar starts at the axis's left edge. */
  clipped: boolean;
  end: BarEnd;
  /** Percent of the axis. */
  left: number;
  width: number;
  /** The bar's text equivalent: holder, from, to, duration and how it ended. */
  label: string;
}

export interface TimelineLane {
  owner: string;
  bars: TimelineBar[];
}

export interface TimelineTick {
  at: number;
  /** Percent of the axis. */
  pct: number;
  label: string;
}

export interface HolderTimeline {
  /** The axis's start: the window's, or a little before the first drawn holding when that is later. */
  start: number;
  /** The axis starts after the window's start, at the drawn holdings. */
  fitted: boolean;
  /** The axis ends a little after now, so the marker and an open holding's arrow stay in view. */
  end: number;
  nowPct: number;
  /** Drawn lanes, earliest holder first. */
  lanes: TimelineLane[];
  /** Holders (and their holdings) in the window that are not drawn. */
  earlierHolders: number;
  earlierHoldings: number;
  holders: number;
  holdings: number;
  /** The most holdings at one moment (above 1 for a semaphore's permits). */
  maxConcurrent: number;
  ticks: TimelineTick[];
  zoneName: string;
}

const END_WORDS: Record<BarEnd, string> = {
  released: "released",
  expired: "expired (its lease ran out)",
  "taken-over": "taken over after its lease ran out",
  "handed-over": "handed over to the next owner",
  lost: "lost (the server restarted)",
  holding: "still held",
  other: "ended",
};

function endOf(h: Holding): BarEnd {
  if (h.to === null) return "holding";
  if (h.end === "owner-changed") return h.takenOver ? "taken-over" : "handed-over";
  if (h.end === "released" || h.end === "expired" || h.end === "lost") return h.end;
  return "other";
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const STEPS = [
  SECOND,
  2 * SECOND,
  5 * SECOND,
  10 * SECOND,
  15 * SECOND,
  30 * SECOND,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY,
  2 * DAY,
  7 * DAY,
];

/** Ticks on whole local seconds, minutes, hours or days in the chosen zone, at most `maxTicks` over the window. */
export function axisTicks(
  start: number,
  now: number,
  end: number,
  zone: ZoneChoice,
  maxTicks: number,
  timeZone?: string,
): TimelineTick[] {
  const span = now - start;
  if (!(span > 0) || maxTicks < 1) return [];
  const step = STEPS.find((s) => span / s <= maxTicks) ?? STEPS[STEPS.length - 1]!;
  const show = step < MINUTE ? "seconds" : step >= DAY ? "date" : span > DAY ? "date-minutes" : ("minutes" as const);
  const offset = zoneOffsetMs(start, zone, timeZone);
  const ticks: TimelineTick[] = [];
  for (let t = Math.ceil((start + offset) / step) * step - offset; t <= now; t += step)
    ticks.push({ at: t, pct: ((t - start) / (end - start)) * 100, label: formatClock(t, zone, show, timeZone) });
  return ticks;
}

/** The shortest fitted axis: three seconds always hold at least two whole-second ticks. */
export const MIN_AXIS_MS = 3000;

export function holderTimeline(holdings: readonly Holding[], o: TimelineOptions): HolderTimeline {
  const maxLanes = o.maxLanes ?? 20;

  const all = holdings
    .map((h) => ({ h, from: Date.parse(h.from), to: h.to === null ? null : Date.parse(h.to) }))
    .filter((x) => Number.isFinite(x.from) && (x.to === null || Number.isFinite(x.to)));
  for (const l of o.live ?? []) {
    const since = l.since ? Date.parse(l.since) : NaN;
    if (!Number.isFinite(since) || all.some((x) => x.to === null && x.h.owner === l.owner)) continue;
    all.push({ h: { owner: l.owner, from: l.since!, to: null, end: null }, from: since, to: null });
  }
  // In the window: ended after its start, begun before now (a clock a little ahead still shows up, at now).
  const inWindow = all
    .filter((x) => (x.to === null || x.to >= o.start) && x.from <= o.now + (o.now - o.start))
    .sort((a, b) => a.from - b.from);

  const byOwner = new Map<string, { owner: string; items: typeof inWindow; last: number; first: number }>();
  for (const x of inWindow) {
    const owner = x.h.owner ?? "unknown holder";
    let lane = byOwner.get(owner);
    if (!lane) {
      lane = { owner, items: [], last: -Infinity, first: x.from };
      byOwner.set(owner, lane);
    }
    lane.items.push(x);
    lane.last = Math.max(lane.last, x.to ?? o.now, x.from);
  }
  // The latest holders are drawn: the ones holding now, then those whose holding ended last.
  const ranked = [...byOwner.values()].sort((a, b) => b.last - a.last || b.first - a.first);
  const shown = ranked.slice(0, maxLanes).sort((a, b) => a.first - b.first);
  const hidden = ranked.slice(maxLanes);

  // The axis spans the drawn holdings, not the whole window: 30 s of handovers in a 1 h window would be a sliver at
  // its right edge. It starts a little before the first drawn holding (never before the window) and ends after now,
  // and it spans MIN_AXIS_MS at the least, so even holdings within one second get two whole-second ticks to read.
  const firstDrawn = Math.min(...shown.map((l) => l.first));
  const start =
    o.fit === false || shown.length === 0
      ? o.start
      : Math.max(o.start, Math.min(firstDrawn - Math.max(1000, (o.now - firstDrawn) * 0.05), o.now - MIN_AXIS_MS));
  const span = Math.max(1, o.now - start);
  const end = o.now + span * 0.03;
  const pct = (t: number) => ((t - start) / (end - start)) * 100;

  const lanes: TimelineLane[] = shown.map((lane) => ({
    owner: lane.owner,
    bars: lane.items.map(({ h, from, to }) => {
      const until = Math.min(to ?? o.now, o.now);
      const left = Math.max(from, start);
      const endKind = endOf(h);
      const label =
        `${lane.owner}: held from ${formatTime(from, o.zone, o.timeZone)} ` +
        `to ${to === null ? "now" : formatTime(to, o.zone, o.timeZone)}, ` +
        `${formatDuration(Math.max(0, (to ?? o.now) - from))}, ${END_WORDS[endKind]}`;
      return {
        from,
        to: to ?? o.now,
        open: to === null,
        clipped: from < start,
        end: endKind,
        left: pct(Math.min(left, o.now)),
        width: Math.max(0.4, pct(until) - pct(Math.min(left, o.now))),
        label,
      };
    }),
  }));

  // The most holdings open at one moment: a sweep over starts and ends (an end before a start at the same ms).
  const edges = inWindow.flatMap((x) => [
    { t: x.from, d: 1 },
    { t: x.to ?? Infinity, d: -1 },
  ]);
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let open = 0;
  let maxConcurrent = 0;
  for (const e of edges) maxConcurrent = Math.max(maxConcurrent, (open += e.d));

  const listedHidden = hidden.reduce((s, l) => s + l.items.length, 0);
  const notListed = Math.max(0, (o.total ?? holdings.length) - holdings.length);
  return {
    start,
    fitted: start > o.start,
    end,
    nowPct: pct(o.now),
    lanes,
    earlierHolders: hidden.length,
    earlierHoldings: listedHidden + notListed,
    holders: byOwner.size,
    holdings: inWindow.length + notListed,
    maxConcurrent,
    ticks: axisTicks(start, o.now, end, o.zone, o.maxTicks ?? 6, o.timeZone),
    zoneName: o.zone === "utc" ? "UTC" : localZoneName(o.now, o.timeZone),
  };
}
