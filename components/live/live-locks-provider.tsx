"use client";

import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  useSyncExternalStore,
  type ReactNode,
} from "react";
import { io, type Socket } from "socket.io-client";
import type { AlertView } from "@/lib/contract/alerts";
import type { LockCounts } from "@/lib/contract/api";
import type { LockEvent, SourceStatus } from "@/lib/contract/lock";
import { liveFreshness } from "./freshness";
import {
  UI_NAMESPACE,
  type LockViewQuery,
  type ServerToUiEvents,
  type UiToServerEvents,
  type ViewAck,
  type ViewUpdate,
} from "@/lib/contract/socket";
import { applyViewUpdate, type LiveLock } from "./view-model";

export type { LiveLock };

export type ConnectionState = "connecting" | "live" | "reconnecting";

type ViewListener = { onUpdate: (u: ViewUpdate, receivedAt: number) => void; onAck: (a: ViewAck) => void };

interface LiveLocks {
  connection: ConnectionState;
  /** Browser time of the last message before the connection was lost (null: none yet); see liveFreshness. */
  lastUpdateAt: number | null;
  /** Open (unacknowledged) alerts, kept current by the server's pushes. */
  openAlerts: number;
  /** Bumped on every alert change the server pushes (raised, resolved, acknowledged): lists refetch on it. */
  alertsVersion: number;
  /** Alerts raised since the page opened, newest first: the toasts. */
  raisedAlerts: AlertView[];
  dismissAlert: (id: string) => void;
  sources: SourceStatus[];
  /** Most recent events pushed since the page opened, newest first. */
  recentEvents: LockEvent[];
  /** Subscribes to a view of the locks (see useLockView); returns the unsubscribe. */
  subscribeView: (viewId: string, query: LockViewQuery, listener: ViewListener) => () => void;
}

const Ctx = createContext<LiveLocks>({
  connection: "connecting",
  lastUpdateAt: null,
  openAlerts: 0,
  alertsVersion: 0,
  raisedAlerts: [],
  dismissAlert: () => undefined,
  sources: [],
  recentEvents: [],
  subscribeView: () => () => undefined,
});

const RECENT = 200;

/**
 * One socket per browser tab, shared by every panel. The tab never receives every lock: each panel subscribes to
 * the view it shows (useLockView) and gets that window and its changes.
 */
export function LiveLocksProvider({ children }: { children: ReactNode }) {
  const [connection, setConnection] = useState<ConnectionState>("connecting");
  // Every message stamps the ref (no re-render); the loss of the connection freezes that stamp into state.
  const lastMessageAt = useRef<number | null>(null);
  const [lastUpdateAt, setLastUpdateAt] = useState<number | null>(null);
  const [sources, setSources] = useState<SourceStatus[]>([]);
  const [recentEvents, setRecentEvents] = useState<LockEvent[]>([]);
  const [openAlerts, setOpenAlerts] = useState(0);
  const [alertsVersion, setAlertsVersion] = useState(0);
  const [raisedAlerts, setRaisedAlerts] = useState<AlertView[]>([]);
  const socketRef = useRef<Socket<ServerToUiEvents, UiToServerEvents> | null>(null);
  const views = useRef(new Map<string, { query: LockViewQuery; listener: ViewListener }>());

  const sendSubscribe = useCallback((viewId: string) => {
    const v = views.current.get(viewId);
    const socket = socketRef.current;
    if (!v || !socket?.connected) return;
    socket.emit("view:subscribe", { viewId, query: v.query }, (ack) => views.current.get(viewId)?.listener.onAck(ack));
  }, []);

  useEffect(() => {
    const socket: Socket<ServerToUiEvents, UiToServerEvents> = io(UI_NAMESPACE, {
      transports: ["websocket", "polling"],
    });
    socketRef.current = socket;
    const stamp = () => (lastMessageAt.current = Date.now());
    const lost = () => {
      setLastUpdateAt(lastMessageAt.current);
      setConnection("reconnecting");
    };
    socket.onAny(stamp);
    socket.on("connect", () => {
      stamp();
      setConnection("live");
      // The server forgets a connection's views when it drops: subscribe them again.
      for (const id of views.current.keys()) sendSubscribe(id);
    });
    socket.on("disconnect", lost);
    socket.on("connect_error", lost);
    socket.on("sources:state", (s) => setSources(s.sources));
    socket.on("view:update", (u) => views.current.get(u.viewId)?.listener.onUpdate(u, Date.now()));
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
      socketRef.current = null;
      socket.close();
    };
  }, [sendSubscribe]);

  const subscribeView = useCallback(
    (viewId: string, query: LockViewQuery, listener: ViewListener) => {
      views.current.set(viewId, { query, listener });
      sendSubscribe(viewId);
      return () => {
        if (views.current.get(viewId)?.listener !== listener) return;
        views.current.delete(viewId);
        socketRef.current?.emit("view:unsubscribe", { viewId });
      };
    },
    [sendSubscribe],
  );

  const dismissAlert = useCallback((id: string) => setRaisedAlerts((prev) => prev.filter((a) => a.id !== id)), []);
  const value = useMemo(
    () => ({
      connection,
      lastUpdateAt,
      sources,
      recentEvents,
      openAlerts,
      alertsVersion,
      raisedAlerts,
      dismissAlert,
      subscribeView,
    }),
    [
      connection,
      lastUpdateAt,
      sources,
      recentEvents,
      openAlerts,
      alertsVersion,
      raisedAlerts,
      dismissAlert,
      subscribeView,
    ],
  );
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useLiveLocks(): LiveLocks {
  return useContext(Ctx);
}

export interface LockView {
  /** The window's rows in order; rows[i] is row offset + i of the whole view. */
  rows: LiveLock[];
  offset: number;
  /** Locks matching the view's filter (every page). */
  total: number;
  counts: LockCounts;
  /** The first answer arrived. */
  ready: boolean;
  /** The server refused the query (the parameter and why). */
  error: string | null;
}

const EMPTY_COUNTS: LockCounts = { byBackend: {}, byHazard: {} };
let viewSeq = 0;

/**
 * Subscribes to one view of the live locks while mounted: the server sends the window (offset, limit) of the
 * filtered, sorted locks, then only its changes. A new query replaces the view in place (rows stay until the new
 * window arrives, so typing in a filter never flashes an empty table). Null: no subscription.
 */
export function useLockView(query: LockViewQuery | null): LockView {
  const { subscribeView } = useLiveLocks();
  const [state, setState] = useState<LockView>({
    rows: [],
    offset: 0,
    total: 0,
    counts: EMPTY_COUNTS,
    ready: false,
    error: null,
  });
  const held = useRef({ byId: new Map<string, LiveLock>(), order: [] as string[], seq: 0 });
  const key = query === null ? null : JSON.stringify(query);

  useEffect(() => {
    if (key === null) return;
    const q = JSON.parse(key) as LockViewQuery;
    // A new id per query: a late update of the previous window can never be taken for the new one.
    const viewId = `v${++viewSeq}`;
    held.current = { ...held.current, seq: 0 };
    return subscribeView(viewId, q, {
      onUpdate(u, receivedAt) {
        if (u.seq <= held.current.seq) return;
        const next = applyViewUpdate(held.current, u, receivedAt);
        held.current = { ...next, seq: u.seq };
        setState({
          rows: next.order.map((id) => next.byId.get(id)).filter((r): r is LiveLock => r !== undefined),
          offset: u.offset,
          total: u.total,
          counts: u.counts,
          ready: true,
          error: null,
        });
      },
      onAck(a) {
        if (!a.ok) setState((s) => ({ ...s, ready: true, error: a.error ?? "the view was refused" }));
      },
    });
  }, [key, subscribeView]);
  return state;
}

/**
 * One shared clock per interval: every countdown cell reads it, so a tick re-renders the cells that show time and
 * nothing else (not the table around them).
 */
const clocks = new Map<
  number,
  { now: number; listeners: Set<() => void>; timer: ReturnType<typeof setInterval> | null }
>();

function clockOf(ms: number) {
  let c = clocks.get(ms);
  if (!c) {
    c = { now: Date.now(), listeners: new Set(), timer: null };
    clocks.set(ms, c);
  }
  return c;
}

function subscribeClock(ms: number, listener: () => void): () => void {
  const c = clockOf(ms);
  c.listeners.add(listener);
  if (!c.timer) {
    c.now = Date.now();
    c.timer = setInterval(() => {
      c.now = Date.now();
      for (const l of c.listeners) l();
    }, ms);
  }
  return () => {
    c.listeners.delete(listener);
    if (c.listeners.size === 0 && c.timer) {
      clearInterval(c.timer);
      c.timer = null;
    }
  };
}

/** The browser's clock, re-rendering the calling component every `ms` (for "last update 12 s ago"). */
export function useClock(ms = 250): number {
  const subscribe = useCallback((l: () => void) => subscribeClock(ms, l), [ms]);
  const get = useCallback(() => clockOf(ms).now, [ms]);
  return useSyncExternalStore(subscribe, get, get);
}

/**
 * The time countdowns use: the clock while live; frozen at the last update while the connection is lost, so TTLs
 * and hold times do not keep moving as if the locks were still seen.
 */
export function useNow(ms = 250): number {
  const now = useClock(ms);
  const { connection, lastUpdateAt } = useContext(Ctx);
  return liveFreshness(connection, lastUpdateAt, now).clock;
}
