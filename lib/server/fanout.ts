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

/** What serverSideEmit's ack callback got: an error on requestsTimeout, and the answers that came. */
export interface RemoteAsk {
  err: Error | null;
  answers: (ReleaseResult | null)[];
}

/**
 * Reads the other dashboards' answers to a routed release. `null`: every other dashboard answered that it does not
 * hold the agent (the caller then says "not connected", which is true). "retry": the adapter counted no other
 * dashboard (PUBSUB NUMSUB of its request channel), so it called back at once with no answer; that happens while
 * another dashboard's subscriber is still connecting or reconnecting, and nothing was asked of anyone, so asking
 * again is safe. A timeout is never retried: an unanswered dashboard may have run the release.
 */
export function judgeRemoteRelease(
  ask: RemoteAsk,
  agentId: string,
  requestsTimeoutMs: number,
): { result: ReleaseResult | null } | "retry" {
  const found = ask.answers.find((x) => x !== null && x !== undefined) ?? null;
  if (found) return { result: found };
  if (ask.err) {
    return {
      result: {
        outcome: "error",
        message: `no dashboard answered for agent ${agentId} within ${Math.round(requestsTimeoutMs / 1000)} s (${ask.answers.length} answered without holding it); whether anything was released is unknown: look at the lock again`,
        plan: [],
        perNode: [],
      },
    };
  }
  if (ask.answers.length === 0) return "retry";
  return { result: null };
}

/** Inter-server acks wait this long: a force-release may take the agent's whole 15 s timeout. */
const REQUESTS_TIMEOUT_MS = 20_000;

/** A routed release that reached no dashboard: nothing was released, and the operator is told why. */
function notAsked(agentId: string, why: string): ReleaseResult {
  return {
    outcome: "error",
    message: `could not ask the dashboard holding agent ${agentId}: ${why}; nothing was released, try again`,
    plan: [],
    perNode: [],
  };
}

/** How long a routed release keeps asking while the adapter counts no other dashboard. */
export const NO_PEER_RETRY_MS = 3000;
/**
 * The same, when another dashboard reported the agent within REMOTE_STALE_MS: that dashboard exists, and counting
 * none is a subscriber (re)connecting on a busy host, so it is worth waiting longer. Nothing is asked of anyone
 * while none is counted, so asking again is safe.
 */
export const HEARD_PEER_RETRY_MS = 10_000;

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

/**
 * The adapter's subscriber connection. ioredis writes a SUBSCRIBE issued between the TCP connect and "ready" at once
 * (it is allowed while the server loads), and its handshake then sends `CLIENT SETINFO` and the ready check's
 * `INFO` on a connection already in subscriber mode: the ready check fails, ioredis drops the commands still queued
 * (the adapter's other subscriptions) and reconnects, resubscribing only what had been confirmed. A dashboard
 * started so (its socket.io server created while the fanout connection was mid-handshake) was never subscribed to
 * the request channel: the other dashboards counted it out (PUBSUB NUMSUB) and their routed releases waited (an
 * e2e run, 2026-12-06; tests/integration/fanout-subscriber.test.ts). A subscriber needs neither the ready check
 * nor the client info.
 */
export function subscriberOf(pub: Redis): Redis {
  return pub.duplicate({ enableReadyCheck: false, disableClientInfo: true });
}

export function connectFanout(opts: {
  url: string;
  serverId: string;
  live: LiveState;
  agents: AgentGateway;
  log: (line: string) => void;
  /** Tests: how long to keep asking while no other dashboard is counted (NO_PEER_RETRY_MS). */
  noPeerRetryMs?: number;
  /** Tests: the same for an agent another dashboard reported recently (HEARD_PEER_RETRY_MS). */
  heardPeerRetryMs?: number;
}): FanoutConnection {
  const pub = new Redis(opts.url, { lazyConnect: false, maxRetriesPerRequest: null });
  const sub = subscriberOf(pub);
  for (const [name, c] of [
    ["publish", pub],
    ["subscribe", sub],
  ] as const) {
    c.on("error", (err: Error) => opts.log(`fanout redis (${name}): ${err.message}`));
  }
  const adapter = createAdapter(pub, sub, { key: "lockscope", requestsTimeout: REQUESTS_TIMEOUT_MS });
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
    if (!io) return notAsked(agentId, "this dashboard's socket.io server is not up yet");
    const server = io;
    const ask = () =>
      new Promise<RemoteAsk>((resolve) => {
        // The adapter never calls back when its PUBSUB NUMSUB fails (it swallows the error): bounded here.
        const guard = setTimeout(
          () => resolve({ err: new Error("the fanout Redis did not answer"), answers: [] }),
          REQUESTS_TIMEOUT_MS + 1000,
        );
        // The callback runs when every other dashboard has answered (null from all but the agent's), after the
        // adapter's requestsTimeout with the answers that came, or at once with none when it counts no other server.
        (server.serverSideEmit as unknown as (event: string, ...args: unknown[]) => boolean).call(
          server,
          "fanout:release",
          me,
          { agentId, command, timeoutMs },
          (err: Error | null, answers: (ReleaseResult | null)[] | undefined) => {
            clearTimeout(guard);
            resolve({ err, answers: answers ?? [] });
          },
        );
      });
    const lastHeard = heard.get(agentId);
    const heardRecently = lastHeard !== undefined && Date.now() - lastHeard <= REMOTE_STALE_MS;
    const retryMs = heardRecently
      ? (opts.heardPeerRetryMs ?? HEARD_PEER_RETRY_MS)
      : (opts.noPeerRetryMs ?? NO_PEER_RETRY_MS);
    const deadline = Date.now() + retryMs;
    for (;;) {
      const got = await ask();
      const verdict = judgeRemoteRelease(got, agentId, REQUESTS_TIMEOUT_MS);
      const past = Date.now() >= deadline;
      // Every other dashboard answered that it does not hold the agent: true now, but a dashboard that has just
      // started (behind the load balancer, after a restart) subscribes before its agents are back. Nobody ran
      // anything, so that is asked again until the same deadline, as a count of no other dashboard is; after it,
      // "not connected" is the answer.
      const askAgain = verdict === "retry" || (verdict.result === null && !past);
      if (!askAgain) {
        if (got.err && verdict.result?.outcome === "error")
          opts.log(`fanout: release of ${command.lockId} not answered: ${got.err.message}`);
        return verdict.result;
      }
      if (past) {
        opts.log(
          `fanout: release of ${command.lockId}: no other dashboard subscribed to the fanout channel for ${retryMs} ms` +
            ` (agent last reported by another dashboard: ${lastHeard === undefined ? "never" : `${Date.now() - lastHeard} ms ago`};` +
            ` fanout connections: publish ${pub.status}, subscribe ${sub.status})`,
        );
        return notAsked(
          agentId,
          "no other dashboard is listening on the fanout Redis (the adapter counted none besides this one)",
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
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
