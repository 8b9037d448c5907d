/** A viewer on the dashboard's live socket (/ui), as a browser is: what it sees, and when. */
import { io, type Socket } from "socket.io-client";
import type { Lock, LockEvent, SourceStatus } from "../../lib/contract/lock";
import { UI_NAMESPACE, type ServerToUiEvents, type UiToServerEvents } from "../../lib/contract/socket";
import { epochMs } from "./stats";

export interface UiViewer {
  /** Calls fn with every events:new batch and the epoch ms it arrived; returns an unsubscribe. */
  onEvents(fn: (events: LockEvent[], atMs: number) => void): () => void;
  /** Calls fn with every lock upserted (state and deltas) and the epoch ms it arrived; returns an unsubscribe. */
  onLocks(fn: (locks: Lock[], atMs: number) => void): () => void;
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
    // A dashboard busy with 10,000 locks may miss a ping: reconnect, and take the fresh locks:state it sends.
    reconnection: true,
    reconnectionDelay: 200,
    reconnectionDelayMax: 1000,
  });
  const sources = new Map<string, SourceStatus>();
  const eventFns = new Set<(events: LockEvent[], atMs: number) => void>();
  const lockFns = new Set<(locks: Lock[], atMs: number) => void>();
  const setSources = (list: SourceStatus[]) => {
    for (const s of list) sources.set(`${s.agentId}\n${s.id}`, s);
  };
  socket.on("events:new", ({ events }) => {
    const at = epochMs();
    for (const fn of eventFns) fn(events, at);
  });
  socket.on("locks:state", (state) => {
    const at = epochMs();
    setSources(state.sources);
    for (const fn of lockFns) fn(state.locks, at);
  });
  socket.on("locks:delta", (delta) => {
    const at = epochMs();
    setSources(delta.sources);
    for (const fn of lockFns) fn(delta.upserts, at);
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
    onLocks(fn) {
      lockFns.add(fn);
      return () => lockFns.delete(fn);
    },
    source: (agentId, sourceId) => sources.get(`${agentId}\n${sourceId}`),
    close: () => socket.close(),
  };
}
