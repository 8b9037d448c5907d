/** A viewer on the dashboard's live socket (/ui), as a browser is: what it sees, and when. */
import { io, type Socket } from "socket.io-client";
import type { Lock, LockEvent, SourceStatus } from "../../lib/contract/lock";
import {
  UI_NAMESPACE,
  type LockViewQuery,
  type ServerToUiEvents,
  type UiToServerEvents,
} from "../../lib/contract/socket";
import { epochMs } from "./stats";

export interface UiViewer {
  /** Calls fn with every events:new batch and the epoch ms it arrived; returns an unsubscribe. */
  onEvents(fn: (events: LockEvent[], atMs: number) => void): () => void;
  /**
   * Subscribes to a view (as a browser tab does) and calls fn with every lock of it sent (the window, then the
   * changed rows) and the epoch ms it arrived; returns an unsubscribe.
   */
  onLocks(fn: (locks: Lock[], atMs: number) => void, query?: LockViewQuery): () => void;
  /** The latest status of each source, by agent and source id. */
  source(agentId: string, sourceId: string): SourceStatus | undefined;
  close(): void;
}

export async function connectViewer(
  dashboardUrl: string,
  token: string,
  log: (line: string) => void,
): Promise<UiViewer> {
  const socket: Socket<ServerToUiEvents, UiToServerEvents> = io(`${dashboardUrl}${UI_NAMESPACE}`, {
    auth: { token },
    transports: ["websocket"],
    // A dashboard busy with 10,000 locks may miss a ping: reconnect, and subscribe the views again.
    reconnection: true,
    reconnectionDelay: 200,
    reconnectionDelayMax: 1000,
  });
  const sources = new Map<string, SourceStatus>();
  const eventFns = new Set<(events: LockEvent[], atMs: number) => void>();
  const views = new Map<string, { fn: (locks: Lock[], atMs: number) => void; query: LockViewQuery }>();
  let nextView = 0;
  const subscribe = (viewId: string, query: LockViewQuery) =>
    socket.emit("view:subscribe", { viewId, query }, (ack) => {
      if (!ack.ok) log(`view ${viewId} refused: ${ack.error ?? "?"}`);
    });
  const setSources = (list: SourceStatus[]) => {
    for (const s of list) sources.set(`${s.agentId}\n${s.id}`, s);
  };
  socket.on("events:new", ({ events }) => {
    const at = epochMs();
    for (const fn of eventFns) fn(events, at);
  });
  socket.on("sources:state", ({ sources: list }) => setSources(list));
  socket.on("view:update", (u) => {
    const at = epochMs();
    views.get(u.viewId)?.fn(u.locks, at);
  });
  socket.on("connect", () => {
    for (const [id, v] of views) subscribe(id, v.query);
  });
  socket.on("disconnect", (reason) => {
    if (reason !== "io client disconnect") log(`viewer socket disconnected (${reason}); reconnecting`);
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no /ui connection within 10 s")), 10_000);
    socket.once("connect", () => {
      clearTimeout(timer);
      resolve();
    });
    socket.once("connect_error", (err) => {
      clearTimeout(timer);
      reject(new Error(`/ui refused the viewer: ${err.message}`));
    });
  });
  return {
    onEvents(fn) {
      eventFns.add(fn);
      return () => eventFns.delete(fn);
    },
    onLocks(fn, query = { limit: 1000 }) {
      const viewId = `bench-${nextView++}`;
      views.set(viewId, { fn, query });
      if (socket.connected) subscribe(viewId, query);
      return () => {
        views.delete(viewId);
        socket.emit("view:unsubscribe", { viewId });
      };
    },
    source: (agentId, sourceId) => sources.get(`${agentId}\n${sourceId}`),
    close: () => socket.close(),
  };
}
