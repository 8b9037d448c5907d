"use client";

import { useCallback, useSyncExternalStore } from "react";
import { useSession } from "../auth/session-provider";
import { useClock } from "../live/live-locks-provider";
import {
  formatTime,
  localZoneName,
  parseZoneChoice,
  relativeTime,
  zoneStorageKey,
  type ZoneChoice,
} from "./format-time";

const noSubscription = () => () => undefined;

/** Same-tab listeners: the storage event only reaches other tabs. */
const listeners = new Set<() => void>();

function subscribe(l: () => void): () => void {
  listeners.add(l);
  window.addEventListener("storage", l);
  return () => {
    listeners.delete(l);
    window.removeEventListener("storage", l);
  };
}

function read(key: string): ZoneChoice {
  try {
    return parseZoneChoice(window.localStorage.getItem(key));
  } catch {
    return "local"; // storage blocked: the browser's zone, still named
  }
}

/** The signed-in user's choice of zone (the browser's own, or UTC), remembered per user in this browser. */
export function useZone(): [ZoneChoice, (z: ZoneChoice) => void] {
  const session = useSession();
  const key = zoneStorageKey(session?.name ?? null);
  const zone = useSyncExternalStore(
    subscribe,
    () => read(key),
    () => "local" as const,
  );
  const set = useCallback(
    (z: ZoneChoice) => {
      try {
        window.localStorage.setItem(key, z);
      } catch {
        // not remembered, but applied to this page
      }
      for (const l of listeners) l();
    },
    [key],
  );
  return [zone, set];
}

/** One time, in the one format with its zone named; `relative` adds "5 m ago" / "in 34 s" after it. */
export function Time({ at, relative = false }: { at: string | number | null | undefined; relative?: boolean }) {
  const [zone] = useZone();
  const now = useClock(1000);
  if (at === null || at === undefined) return <span>—</span>;
  const iso = typeof at === "number" ? new Date(at).toISOString() : at;
  return (
    <time dateTime={iso} title={formatTime(at, zone === "utc" ? "local" : "utc")} className="whitespace-nowrap">
      {formatTime(at, zone)}
      {relative ? <span className="text-slate-400"> ({relativeTime(at, now)})</span> : null}
    </time>
  );
}

/** The header's switch between the browser's zone and UTC. */
export function ZoneToggle() {
  const [zone, setZone] = useZone();
  // The server does not know the browser's zone: "local" there and during hydration, the zone's name after.
  const name = useSyncExternalStore(
    noSubscription,
    () => localZoneName(Date.now()),
    () => "local",
  );
  return (
    <button
      type="button"
      data-testid="zone-toggle"
      onClick={() => setZone(zone === "utc" ? "local" : "utc")}
      className="rounded border border-slate-700 px-1.5 py-0.5 text-xs text-slate-300 hover:text-slate-100"
      title="Show times in UTC or in this browser's zone"
    >
      {zone === "utc" ? "UTC" : name}
    </button>
  );
}
