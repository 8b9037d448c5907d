import { timingSafeEqual } from "node:crypto";
import type { Server as HttpServer } from "node:http";
import { Server, type ServerOptions } from "socket.io";
import {
  AGENT_NAMESPACE,
  UI_NAMESPACE,
  type AgentAck,
  type AgentToServerEvents,
  type ServerToAgentEvents,
  type ServerToUiEvents,
  type UiDelta,
  type UiToServerEvents,
} from "../contract/socket";
import type { LockEvent } from "../contract/lock";
import { parseAgentSnapshot, parseAgentUpdate } from "../contract/validate";
import type { AgentGateway } from "./agent-gateway";
import type { Authenticator } from "./auth/authenticator";
import type { LiveState } from "./live-state";
import type { Fanout } from "./fanout";
import type { HistoryStore } from "./store";

function sameSecret(given: unknown, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * socket.io glue: agents stream into the live state and the history store; browsers get the state on connect and
 * deltas after. An agent's message is acknowledged only after its events are committed to the store.
 */
export function attachHub(
  http: HttpServer,
  deps: {
    live: LiveState;
    store: HistoryStore;
    auth: Authenticator;
    agents: AgentGateway;
    agentToken: string;
    log: (line: string) => void;
    /** Called with newly stored events (metrics, alert evaluation). */
    onEvents?: (events: LockEvent[]) => void;
    /** Called after any change of the live state. */
    onChange?: () => void;
    /** Several dashboards: the socket.io Redis adapter, and where local agents' live state is handed on. */
    adapter?: ServerOptions["adapter"];
    fanout?: Fanout;
  },
): Server {
  const io = new Server(http, {
    maxHttpBufferSize: 50 * 1024 * 1024,
    serveClient: false,
    ...(deps.adapter ? { adapter: deps.adapter } : {}),
  });
  const ui = io.of(UI_NAMESPACE) as unknown as import("socket.io").Namespace<UiToServerEvents, ServerToUiEvents>;
  const agents = io.of(AGENT_NAMESPACE) as unknown as import("socket.io").Namespace<
    AgentToServerEvents,
    ServerToAgentEvents
  >;

  const broadcast = (delta: UiDelta | null) => {
    if (delta) ui.emit("locks:delta", delta);
    deps.onChange?.();
  };

  agents.use((socket, next) => {
    const auth = socket.handshake.auth as { token?: unknown; agentId?: unknown };
    if (!sameSecret(auth.token, deps.agentToken)) return next(new Error("unauthorised: wrong or missing agent token"));
    if (typeof auth.agentId !== "string" || auth.agentId === "") return next(new Error("agentId is required"));
    socket.data.agentId = auth.agentId;
    next();
  });

  agents.on("connection", (socket) => {
    const agentId = socket.data.agentId as string;
    deps.log(`agent ${agentId} connected`);
    deps.agents.add(agentId, socket);
    socket.on("agent:snapshot", async (raw, ack) => {
      const reply = typeof ack === "function" ? ack : () => undefined;
      const parsed = parseAgentSnapshot(raw);
      if (!parsed.ok) return reply(refuse(`invalid snapshot: ${parsed.error}`));
      if (parsed.value.agentId !== agentId) return reply(refuse("agentId does not match the connection"));
      try {
        await deps.store.touchAgent({ id: agentId, name: parsed.value.agentName, version: parsed.value.version });
      } catch (err) {
        return reply(refuse(`store unavailable: ${String(err)}`));
      }
      broadcast(deps.live.applySnapshot(parsed.value));
      deps.fanout?.snapshot(parsed.value);
      reply({ ok: true, stored: [] });
    });
    socket.on("agent:update", async (raw, ack) => {
      const reply = typeof ack === "function" ? ack : () => undefined;
      const parsed = parseAgentUpdate(raw);
      if (!parsed.ok) return reply(refuse(`invalid update: ${parsed.error}`));
      if (parsed.value.agentId !== agentId) return reply(refuse("agentId does not match the connection"));
      let saved: { stored: string[]; fresh: LockEvent[] };
      try {
        saved = await deps.store.saveEvents(parsed.value.events);
      } catch (err) {
        deps.log(`could not store events from ${agentId}: ${String(err)}`);
        return reply(refuse("store unavailable; keep the events and retry"));
      }
      broadcast(deps.live.applyUpdate(parsed.value));
      deps.fanout?.update(parsed.value);
      // Only new events go to browsers and listeners: a replay after a reconnect is stored once and shown once.
      if (saved.fresh.length > 0) {
        ui.emit("events:new", { events: saved.fresh });
        deps.onEvents?.(saved.fresh);
      }
      reply({ ok: true, stored: saved.stored });
    });
    socket.on("disconnect", (reason) => {
      deps.log(`agent ${agentId} disconnected (${reason})`);
      deps.agents.remove(agentId, socket);
      // Another connection of the same agent may already be up (reconnect races): only mark it gone if none is.
      const stillThere = [...agents.sockets.values()].some((s) => s.id !== socket.id && s.data.agentId === agentId);
      if (!stillThere) {
        broadcast(deps.live.disconnect(agentId));
        deps.fanout?.gone(agentId);
      }
    });
  });

  // Browsers: the same session cookie as the pages (or a bearer token in the handshake for scripts).
  ui.use((socket, next) => {
    const token = (socket.handshake.auth as { token?: unknown }).token;
    const headers = typeof token === "string" ? { authorization: `Bearer ${token}` } : socket.request.headers;
    if (!deps.auth.fromHeaders(headers)) return next(new Error("unauthorised: sign in first"));
    next();
  });

  ui.on("connection", (socket) => {
    socket.emit("locks:state", deps.live.state());
  });
  return io;
}

/** The /ui namespace, for pushing alert changes to browsers. */
export function uiNamespace(io: Server) {
  return io.of(UI_NAMESPACE) as unknown as import("socket.io").Namespace<UiToServerEvents, ServerToUiEvents>;
}

function refuse(error: string): AgentAck {
  return { ok: false, stored: [], error };
}
