"use client";

import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { io, type Socket } from "socket.io-client";
import type { AlertView } from "@/lib/contract/alerts";
import type { Lock, LockEvent, SourceStatus } from "@/lib/contract/lock";
import { UI_NAMESPACE, type ServerToUiEvents, type UiToServerEvents } from "@/lib/contract/socket";

/** A lock as received, with the browser's own clock at receipt so TTLs count down without trusting other clocks. */
export interface LiveLock {
  lock: Lock;
  receivedAt: number;
}

export type ConnectionState = "connecting" | "live" | "reconnecting";

interface LiveLocks {
  connection: ConnectionState;
  /** Open (unacknowledged) alerts, kept current by the server's pushes. */
  openAlerts: number;
  /** Bumped on every alert change the server pushes (raised, resolved, acknowledged): lists refetch on it. */
  alertsVersion: number;
  /** Alerts raised since the page opened, newest first: the toasts. */
  raisedAlerts: AlertView[];
  dismissAlert: (id: string) => void;
  locks: Map<string, LiveLock>;
  sources: SourceStatus[];
  /** Most recent events pushed since the page opened, newest first. */
  recentEvents: LockEvent[];
}

const Ctx = createContext<LiveLocks>({
  connection: "connecting",
  openAlerts: 0,
  alertsVersion: 0,
  raisedAlerts: [],
  dismissAlert: () => undefined,
  locks: new Map(),
  sources: [],
  recentEvents: [],
});

const RECENT = 200;

/** One socket per browser tab, shared by every panel. */
export function LiveLocksProvider({ children }: { children: ReactNode }) {
  const [connection, setConnection] = useState<ConnectionState>("connecting");
  const [locks, setLocks] = useState<Map<string, LiveLock>>(new Map());
  const [sources, setSources] = useState<SourceStatus[]>([]);
  const [recentEvents, setRecentEvents] = useState<LockEvent[]>([]);
  const [openAlerts, setOpenAlerts] = useState(0);
  const [alertsVersion, setAlertsVersion] = useState(0);
  const [raisedAlerts, setRaisedAlerts] = useState<AlertView[]>([]);

  useEffect(() => {
    const socket: Socket<ServerToUiEvents, UiToServerEvents> = io(UI_NAMESPACE, {
      transports: ["websocket", "polling"],
    });
    socket.on("connect", () => setConnection("live"));
    socket.on("disconnect", () => setConnection("reconnecting"));
    socket.on("connect_error", () => setConnection("reconnecting"));
    socket.on("locks:state", (state) => {
      const now = Date.now();
      setLocks(new Map(state.locks.map((l) => [l.id, { lock: l, receivedAt: now }])));
      setSources(state.sources);
    });
    socket.on("locks:delta", (delta) => {
      const now = Date.now();
      setLocks((prev) => {
        const next = new Map(prev);
        for (const l of delta.upserts) next.set(l.id, { lock: l, receivedAt: now });
        for (const id of delta.removed) next.delete(id);
        return next;
      });
      setSources(delta.sources);
    });
    socket.on("alerts:changed", ({ raised, open }) => {
      setOpenAlerts(open);
      setAlertsVersion((v) => v + 1);
      if (raised.length > 0) setRaisedAlerts((prev) => [...raised, ...prev].slice(0, 5));
    });
    fetch("/api/alerts?state=open&limit=1", { cache: "no-store" })
      .then(async (res) => (res.ok ? setOpenAlerts(((await res.json()) as { open: number }).open) : undefined))
      .catch(() => undefined);
    socket.on("events:new", ({ events }) => {
      setRecentEvents((prev) => [...[...events].reverse(), ...prev].slice(0, RECENT));
    });
    return () => {
      socket.close();
    };
  }, []);

  const dismissAlert = useCallback((id: string) => setRaisedAlerts((prev) => prev.filter((a) => a.id !== id)), []);
  const value = useMemo(
    () => ({ connection, locks, sources, recentEvents, openAlerts, alertsVersion, raisedAlerts, dismissAlert }),
    [connection, locks, sources, recentEvents, openAlerts, alertsVersion, raisedAlerts, dismissAlert],
  );
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useLiveLocks(): LiveLocks {
  return useContext(Ctx);
}

/** Re-renders every `ms` so countdowns move between updates. */
export function useNow(ms = 250): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
