/**
 * Several dashboards behind a load balancer (FANOUT_REDIS_URL): they share live state through the socket.io Redis
 * adapter (@socket.io/redis-adapter), so each one answers /api/locks with every agent's locks, and a browser on any
 * of them gets every change.
 *
 * - An agent streams to one dashboard (its socket lives there). That dashboard stores the events, applies the
 *   message and broadcasts the delta to browsers, which the adapter delivers to browsers on every dashboard. It
 *   also hands the live part (locks and sources, never the events: they are stored once, by it) to the other
 *   dashboards, which apply it to their own live state without broadcasting again.
 * - A force-release is asked of the dashboard holding the owning agent's connection (serverSideEmit with ack); the
 *   dashboard that took the HTTP request writes the audit row, once.
 * - An agent no dashboard has heard of for REMOTE_STALE_MS (its dashboard died) is shown as disconnected, as a
 *   local one would be; it comes back with its snapshot when it reconnects anywhere.
 */
import { Redis } from "ioredis";
import { createAdapter } from "@socket.io/redis-adapter";
import type { Server } from "socket.io";
import type { ReleaseCommand, ReleaseResult } from "../contract/release";
import type { AgentSnapshot, AgentUpdate } from "../contract/socket";
import type { AgentGateway } from "./agent-gateway";
import type { LiveChange, LiveState } from "./live-state";

/** Agents send a sources refresh at least every 2 s (SOURCES_REFRESH_MS); five missed ones mean their dashboard is gone. */
export const REMOTE_STALE_MS = 10_000;

export interface InterServerEvents {
  "fanout:snapshot": (from: string, snapshot: AgentSnapshot) => void;
  "fanout:update": (from: string, update: AgentUpdate) => void;
  "fanout:gone": (from: string, agentId: string) => void;
  "fanout:release": (
    from: string,
    req: { agentId: string; command: ReleaseCommand; timeoutMs: number },
    ack: (result: ReleaseResult | null) => void,
  ) => void;
}

/** What the hub calls to hand local agents' live state to the other dashboards. */
export interface Fanout {
  snapshot(s: AgentSnapshot): void;
  update(u: AgentUpdate): void;
  gone(agentId: string): void;
  /** The hub's way of showing a live-state change to its browsers (views, sources) and alert scheduling. */
  bind(apply: (change: LiveChange | null) => void): void;
}

/**
 * Which remote agents are stale: pure, so the rule is tested without Redis. `heard` maps agent id to the last
 * time another dashboard reported it; local agents are never stale here (the hub sees them go).
 */
export function staleRemoteAgents(
  heard: ReadonlyMap<string, number>,
  isLocal: (agentId: string) => boolean,
  now: number,
  staleMs = REMOTE_STALE_MS,
): string[] {
  return [...heard].filter(([id, at]) => !isLocal(id) && now - at > staleMs).map(([id]) => id);
}

export interface FanoutConnection {
  fanout: Fanout;
  /** The adapter, for `new Server(..., { adapter })`. */
  adapter: ReturnType<typeof createAdapter>;
  /** Wires the inter-server handlers once the Server exists. */
  attach(io: Server): void;
  /** Shows a change made here (the leader lock) to this dashboard's browsers, as the hub shows agents' changes. */
  show(change: LiveChange | null): void;
  close(): Promise<void>;
}

export function connectFanout(opts: {
  url: string;
  serverId: string;
  live: LiveState;
  agents: AgentGateway;
  log: (line: string) => void;
}): FanoutConnection {
  const pub = new Redis(opts.url, { lazyConnect: false, maxRetriesPerRequest: null });
  const sub = pub.duplicate();
  for (const [name, c] of [
    ["publish", pub],
    ["subscribe", sub],
  ] as const) {
    c.on("error", (err: Error) => opts.log(`fanout redis (${name}): ${err.message}`));
  }
  // Inter-server acks wait this long: a force-release may take the agent's whole 15 s timeout.
  const adapter = createAdapter(pub, sub, { key: "lockscope", requestsTimeout: 20_000 });
  let io: Server | null = null;
  const heard = new Map<string, number>();
  const me = opts.serverId;
  let apply: (change: LiveChange | null) => void = () => undefined;

  const emit = <E extends "fanout:snapshot" | "fanout:update" | "fanout:gone">(
    event: E,
    ...args: Parameters<InterServerEvents[E]>
  ) => {
    // serverSideEmit never reaches the sending server itself.
    (io?.serverSideEmit as ((e: string, ...a: unknown[]) => boolean) | undefined)?.call(io, event, ...args);
  };

  const fanout: Fanout = {
    snapshot: (s) => emit("fanout:snapshot", me, s),
    update: (u) => emit("fanout:update", me, { ...u, events: [] }),
    gone: (agentId) => emit("fanout:gone", me, agentId),
    bind: (fn) => {
      apply = fn;
    },
  };

  const sweep = setInterval(() => {
    for (const id of staleRemoteAgents(heard, (a) => opts.agents.isConnected(a), Date.now())) {
      heard.delete(id);
      apply(opts.live.disconnect(id));
    }
  }, 1000);
  sweep.unref();

  opts.agents.setRemote(async (agentId, command, timeoutMs) => {
    if (!io) return null;
    const server = io;
    return new Promise<ReleaseResult | null>((resolve) => {
      // The callback runs when every other dashboard has answered (null from all but the agent's), or after the
      // adapter's requestsTimeout with the answers that came.
      (server.serverSideEmit as unknown as (event: string, ...args: unknown[]) => boolean).call(
        server,
        "fanout:release",
        me,
        { agentId, command, timeoutMs },
        (err: Error | null, answers: (ReleaseResult | null)[] | undefined) => {
          const found = (answers ?? []).find((x) => x !== null) ?? null;
          if (err && !found) opts.log(`fanout: release of ${command.lockId} not answered: ${err.message}`);
          resolve(found);
        },
      );
    });
  });

  return {
    fanout,
    adapter,
    attach(server) {
      io = server;
      const on = server.on.bind(server) as (event: string, fn: (...args: never[]) => void) => void;
      on("fanout:snapshot", (_from: string, s: AgentSnapshot) => {
        if (opts.agents.isConnected(s.agentId)) return; // ours now: a late message from its old dashboard
        heard.set(s.agentId, Date.now());
        apply(opts.live.applySnapshot(s));
      });
      on("fanout:update", (_from: string, u: AgentUpdate) => {
        if (opts.agents.isConnected(u.agentId)) return;
        heard.set(u.agentId, Date.now());
        apply(opts.live.applyUpdate(u));
      });
      on("fanout:gone", (_from: string, agentId: string) => {
        if (opts.agents.isConnected(agentId)) return;
        heard.delete(agentId);
        apply(opts.live.disconnect(agentId));
      });
      on(
        "fanout:release",
        (
          _from: string,
          req: { agentId: string; command: ReleaseCommand; timeoutMs: number },
          ack: (r: ReleaseResult | null) => void,
        ) => {
          if (!opts.agents.isConnected(req.agentId)) return ack(null);
          void opts.agents.releaseLocal(req.agentId, req.command, req.timeoutMs).then(ack);
        },
      );
    },
    show: (change) => apply(change),
    async close() {
      clearInterval(sweep);
      pub.disconnect();
      sub.disconnect();
    },
  };
}
