import type { IncomingHttpHeaders, Server as HttpServer } from "node:http";
import type { Server, ServerOptions } from "socket.io";
import {
  AGENT_NAMESPACE,
  UI_NAMESPACE,
  type AgentAck,
  type AgentToServerEvents,
  type ServerToAgentEvents,
  type LockViewQuery,
  type ServerToUiEvents,
  type UiToServerEvents,
  type ViewAck,
} from "../contract/socket";
import type { LockEvent } from "../contract/lock";
import { parseAgentSnapshot, parseAgentUpdate, parseViewSubscribe } from "../contract/validate";
import type { AgentGateway } from "./agent-gateway";
import { createSocketServers, sameSecret } from "./socket-servers";
import type { Authenticator } from "./auth/authenticator";
import type { Fanout } from "./fanout";
import type { LiveChange, LiveState } from "./live-state";
import { parseLockQuery } from "./lock-query";
import { LockViews } from "./lock-views";
import type { HistoryStore } from "./store";

/**
 * socket.io glue: agents stream into the live state and the history store; browsers subscribe to the views they
 * show and get those views' changes (never the whole state). An agent's message is applied to the live state on
 * receipt and acknowledged only after its events are committed to the store.
 */
/** How often open browser sockets are checked against the session records. */
const SOCKET_RECHECK_MS = 1000;

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
  // Agents and browsers on separate servers with their own size limits; see socket-servers.ts.
  const { io, agentIo } = createSocketServers(http, deps.agentToken);
  // Several dashboards: the browsers' server shares broadcasts (alerts, new events) and inter-server messages.
  if (deps.adapter) io.adapter(deps.adapter);
  const ui = io.of(UI_NAMESPACE) as unknown as import("socket.io").Namespace<UiToServerEvents, ServerToUiEvents>;
  const agents = agentIo.of(AGENT_NAMESPACE) as unknown as import("socket.io").Namespace<
    AgentToServerEvents,
    ServerToAgentEvents
  >;

  const views = new LockViews(deps.live);
  // Sources are small and every page shows them (header): sent to every tab, only when they changed, coalesced.
  let sentSources = "";
  let sourcesTimer: NodeJS.Timeout | null = null;
  const pushSources = () => {
    sourcesTimer = null;
    const sources = deps.live.sources();
    const json = JSON.stringify(sources);
    if (json === sentSources) return;
    sentSources = json;
    // Local: with several dashboards each one pushes its own browsers (the state is shared, not the pushes).
    ui.local.emit("sources:state", { generatedAt: new Date().toISOString(), sources });
  };
  const broadcast = (change: LiveChange | null) => {
    if (change) views.onChange(change);
    sourcesTimer ??= setTimeout(pushSources, 100);
    deps.onChange?.();
  }; // Changes other dashboards' agents made to the live state reach this dashboard's browsers the same way.
  deps.fanout?.bind(broadcast);

  agents.use((socket, next) => {
    const auth = socket.handshake.auth as { token?: unknown; agentId?: unknown; instanceId?: unknown };
    if (!sameSecret(auth.token, deps.agentToken)) return next(new Error("unauthorised: wrong or missing agent token"));
    if (typeof auth.agentId !== "string" || auth.agentId === "" || auth.agentId.length > 128) {
      return next(new Error("agentId is required (1 to 128 characters)"));
    }
    // Without an instance id (an older agent) each connection counts as its own process.
    const instanceId =
      typeof auth.instanceId === "string" && auth.instanceId !== "" ? auth.instanceId.slice(0, 128) : socket.id;
    // One live connection per agent id: release commands must reach the process that reported the lock.
    const admission = deps.agents.admission(auth.agentId, instanceId);
    if (!admission.admit) {
      deps.log(`refused a second connection for agent ${auth.agentId} from ${socket.handshake.address}`);
      return next(new Error(admission.error));
    }
    socket.data.agentId = auth.agentId;
    socket.data.instanceId = instanceId;
    next();
  });

  agents.on("connection", (socket) => {
    const agentId = socket.data.agentId as string;
    deps.log(`agent ${agentId} connected`);
    deps.agents.add(agentId, socket, socket.data.instanceId as string);
    socket.on("agent:snapshot", async (raw, ack) => {
      const receivedAtMs = Date.now();
      const reply = typeof ack === "function" ? ack : () => undefined;
      const parsed = parseAgentSnapshot(raw);
      if (!parsed.ok) return reply(refuse(`invalid snapshot: ${parsed.error}`));
      if (parsed.value.agentId !== agentId) return reply(refuse("agentId does not match the connection"));
      // A snapshot in parts touches the store once, on its first part. A snapshot carries no events, so a store that
      // is down does not refuse it: the live view keeps showing what the agent sees while the history is unavailable
      // (each update the store refuses makes the agent send a snapshot, which is applied).
      if (!parsed.value.part || parsed.value.part.index === 0) {
        try {
          await deps.store.touchAgent({ id: agentId, name: parsed.value.agentName, version: parsed.value.version });
        } catch (err) {
          deps.log(`could not record agent ${agentId} in the store: ${String(err)}`);
        }
      }
      broadcast(deps.live.applySnapshot(parsed.value, receivedAtMs));
      deps.fanout?.snapshot(parsed.value);
      reply({ ok: true, stored: [] });
    });
    socket.on("agent:update", async (raw, ack) => {
      // Receipt, before validation and the store's commit: the TTL counts down from here, and the browsers' delivery
      // time is measured from it (bench/locks-table.ts).
      const receivedAtMs = Date.now();
      const reply = typeof ack === "function" ? ack : () => undefined;
      const parsed = parseAgentUpdate(raw);
      if (!parsed.ok) return reply(refuse(`invalid update: ${parsed.error}`));
      if (parsed.value.agentId !== agentId) return reply(refuse("agentId does not match the connection"));
      // The live state first: the locks as the agent sees them now do not wait for the history's write (behind other
      // agents' batches, or a store that is down). If the write fails, the agent is refused and repairs the dashboard
      // with a snapshot, so the live state stays what the agent sees either way.
      broadcast(deps.live.applyUpdate(parsed.value, receivedAtMs));
      deps.fanout?.update(parsed.value);
      let saved: { stored: string[]; fresh: LockEvent[] };
      try {
        saved = await deps.store.saveEvents(parsed.value.events);
      } catch (err) {
        deps.log(`could not store events from ${agentId}: ${String(err)}`);
        return reply(refuse("store unavailable; keep the events and retry"));
      }
      // Only new events go to browsers and listeners: a replay after a reconnect is stored once and shown once.
      if (saved.fresh.length > 0) {
        // socket.io encodes a broadcast before looking for receivers: with no browser here and no other dashboard
        // to reach, 1,000 events would be serialised for nobody.
        if (deps.adapter || ui.sockets.size > 0) ui.emit("events:new", { events: saved.fresh });
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
  const credentials = (socket: { handshake: { auth: unknown }; request: { headers: IncomingHttpHeaders } }) => {
    const token = (socket.handshake.auth as { token?: unknown }).token;
    return typeof token === "string" ? { authorization: `Bearer ${token}` } : socket.request.headers;
  };
  ui.use((socket, next) => {
    if (!deps.auth.fromHeaders(credentials(socket))) return next(new Error("unauthorised: sign in first"));
    next();
  });
  // An open live socket is checked again every second against the session records (which follow logouts, removed
  // users and changed roles on every dashboard): a revoked session stops receiving live data within a second.
  const recheck = setInterval(() => {
    for (const socket of ui.sockets.values()) {
      if (!deps.auth.fromHeaders(credentials(socket))) socket.disconnect(true);
    }
  }, SOCKET_RECHECK_MS);
  recheck.unref();
  io.on("close", () => clearInterval(recheck));

  ui.on("connection", (socket) => {
    socket.emit("sources:state", { generatedAt: new Date().toISOString(), sources: deps.live.sources() });
    // A tab that cannot keep up gets no more updates until its buffer drains, then its whole window once.
    const send = (u: Parameters<ServerToUiEvents["view:update"]>[0]) => {
      if ((socket.conn as unknown as { writeBuffer: unknown[] }).writeBuffer.length > 64) return false;
      socket.emit("view:update", u);
      return true;
    };
    socket.on("view:subscribe", (raw, ack) => {
      const reply = typeof ack === "function" ? ack : (_: ViewAck) => undefined;
      const sub = parseViewSubscribe(raw);
      if (!sub.ok) return reply({ ok: false, error: `invalid subscription: ${sub.error}` });
      const parsed = parseLockQuery(viewParams(sub.value.query));
      if (!parsed.ok) return reply({ ok: false, param: parsed.param, error: parsed.error });
      const error = views.subscribe(socket.id, sub.value.viewId, parsed.query, send);
      reply(error ? { ok: false, error } : { ok: true });
    });
    socket.on("view:unsubscribe", (raw) => {
      const viewId = (raw as { viewId?: unknown } | null)?.viewId;
      if (typeof viewId === "string") views.unsubscribe(socket.id, viewId);
    });
    socket.on("disconnect", () => views.dropClient(socket.id));
  });
  return io;
}

/** The /ui namespace, for pushing alert changes to browsers. */
export function uiNamespace(io: Server) {
  return io.of(UI_NAMESPACE) as unknown as import("socket.io").Namespace<UiToServerEvents, ServerToUiEvents>;
}

/** A subscription's query as the parameters GET /api/locks takes, so both are checked by the same parser. */
function viewParams(q: LockViewQuery): Array<[string, string]> {
  return Object.entries(q)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, String(v)]);
}

function refuse(error: string): AgentAck {
  return { ok: false, stored: [], error };
}
