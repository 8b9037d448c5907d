"use client";

import { createContext, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { io, type Socket } from "socket.io-client";
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
  locks: Map<string, LiveLock>;
  sources: SourceStatus[];
  /** Most recent events pushed since the page opened, newest first. */
  recentEvents: LockEvent[];
}

const Ctx = createContext<LiveLocks>({ connection: "connecting", locks: new Map(), sources: [], recentEvents: [] });

const RECENT = 200;

/** One socket per browser tab, shared by every panel. */
export function LiveLocksProvider({ children }: { children: ReactNode }) {
  const [connection, setConnection] = useState<ConnectionState>("connecting");
  const [locks, setLocks] = useState<Map<string, LiveLock>>(new Map());
  const [sources, setSources] = useState<SourceStatus[]>([]);
  const [recentEvents, setRecentEvents] = useState<LockEvent[]>([]);

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
    socket.on("events:new", ({ events }) => {
      setRecentEvents((prev) => [...[...events].reverse(), ...prev].slice(0, RECENT));
    });
    return () => {
      socket.close();
    };
  }, []);

  const value = useMemo(
    () => ({ connection, locks, sources, recentEvents }),
    [connection, locks, sources, recentEvents],
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
