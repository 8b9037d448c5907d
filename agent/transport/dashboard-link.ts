import { randomUUID } from "node:crypto";
import { io, type Socket } from "socket.io-client";
import type { Lock, LockEvent, SourceStatus } from "../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../lib/contract/release";
import {
  AGENT_SOCKET_PATH,
  AGENT_TOKEN_HEADER,
  AGENT_NAMESPACE,
  SNAPSHOT_PART_MAX_BYTES,
  SNAPSHOT_PART_MAX_LOCKS,
  type AgentAck,
  type AgentHandshake,
  type AgentToServerEvents,
  type ServerToAgentEvents,
} from "../../lib/contract/socket";
import { EventBuffer } from "./event-buffer";

export interface DashboardLinkOptions {
  dashboardUrl: string;
  agentToken: string;
  agentId: string;
  agentName: string;
  version: string;
  bufferEvents: number;
  /** The agent's whole current state, sent on every (re)connect. */
  sources: () => SourceStatus[];
  /**
   * Whether that state has been observed yet (the agent's first poll has completed); nothing is sent before. A
   * snapshot taken during the first poll showed each source not polled yet as down ("not polled yet"), and the
   * dashboard raised a critical source-down alert (and its webhook) for a healthy server whose first poll was slow.
   * Default: always.
   */
  ready?: () => boolean;
  locks: () => Lock[];
  log: (line: string) => void;
  /** Runs a force-release the dashboard asks for. */
  release: (cmd: ReleaseCommand) => Promise<ReleaseResult>;
  ackTimeoutMs?: number;
}

const BATCH = 1000;
/** Removed ids per update: 10,000 ids of at most 128 characters stay near 1 MB. */
const MAX_REMOVED_PER_UPDATE = 10_000;

function* takeFirst<T>(items: Iterable<T>, n: number): Generator<T> {
  if (n <= 0) return;
  let i = 0;
  for (const x of items) {
    yield x;
    if (++i >= n) return;
  }
}

/**
 * Splits a snapshot's locks into parts of at most maxLocks locks and about maxBytes of JSON each (a part holds at
 * least one lock, however large). Pure.
 */
export function snapshotParts(
  locks: readonly Lock[],
  maxLocks = SNAPSHOT_PART_MAX_LOCKS,
  maxBytes = SNAPSHOT_PART_MAX_BYTES,
): Lock[][] {
  const parts: Lock[][] = [];
  let current: Lock[] = [];
  let bytes = 0;
  for (const l of locks) {
    const size = JSON.stringify(l).length + 1;
    if (current.length > 0 && (current.length >= maxLocks || bytes + size > maxBytes)) {
      parts.push(current);
      current = [];
      bytes = 0;
    }
    current.push(l);
    bytes += size;
  }
  // An agent with no locks still sends one (empty) part: it is what clears the dashboard's old state.
  parts.push(current);
  return parts;
}
/** Figures that move at every poll (latencies, clock offsets, scan times) are sent at most this often on their own. */
export const SOURCES_REFRESH_MS = 2000;
/** After the dashboard refused the handshake itself (socket.io then stops reconnecting), try again this often. */
export const REFUSED_RETRY_MS = 5000;

/**
 * What of the sources' status is news at once: up/down, errors, lock counts, node health. Per-poll figures are left
 * out, so a quiet fleet sends one small update per SOURCES_REFRESH_MS rather than one per poll.
 */
export function sourcesFingerprint(sources: readonly SourceStatus[]): string {
  return JSON.stringify(
    sources.map(({ lastScanAt: _a, lastScanMs: _m, lastSweepMs: _w, lastPollAt: _p, nodes, ...s }) => ({
      ...s,
      nodes: nodes?.map(({ latencyMs: _l, clockOffsetMs: _c, offset: _o, lagBytes: _b, ...n }) => n),
    })),
  );
}

/**
 * The agent's side of the stream: a full snapshot on every connect, then deltas with events. An event leaves the
 * buffer only when the dashboard acknowledges that it is stored, so a dashboard restart loses nothing the agent
 * still holds; a delta that may not have arrived is repaired by sending a fresh snapshot.
 */
export class DashboardLink {
  private readonly socket: Socket<ServerToAgentEvents, AgentToServerEvents>;
  private readonly buffer: EventBuffer;
  private upserts = new Map<string, Lock>();
  private removed = new Set<string>();
  private needSnapshot = true;
  private sending = false;
  private reportedDrops = 0;
  private sentSources = "";
  private sentSourcesAtMs = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private closed = false;
  connected = false;

  constructor(private readonly opts: DashboardLinkOptions) {
    this.buffer = new EventBuffer(opts.bufferEvents);
    const handshake: AgentHandshake = { token: opts.agentToken, agentId: opts.agentId, instanceId: randomUUID() };
    this.socket = io(`${opts.dashboardUrl}${AGENT_NAMESPACE}`, {
      path: AGENT_SOCKET_PATH,
      // The token also goes in a header: the dashboard checks it before it accepts the websocket at all.
      extraHeaders: { [AGENT_TOKEN_HEADER]: opts.agentToken },
      auth: handshake,
      reconnection: true,
      reconnectionDelay: 500,
      reconnectionDelayMax: 10_000,
      transports: ["websocket"],
    });
    this.socket.on("connect", () => {
      this.connected = true;
      this.needSnapshot = true;
      opts.log(`connected to dashboard ${opts.dashboardUrl}`);
      void this.flush();
    });
    this.socket.on("disconnect", (reason) => {
      this.connected = false;
      opts.log(`dashboard connection lost (${reason}); buffering events`);
      this.trimBuffer();
    });
    this.socket.on("release:execute", (cmd, ack) => {
      const reply = typeof ack === "function" ? ack : () => undefined;
      opts
        .release(cmd)
        .then(reply)
        .catch((err: unknown) =>
          reply({
            outcome: "error",
            message: `agent error: ${err instanceof Error ? err.message : String(err)}`,
            plan: [],
            perNode: [],
          }),
        );
    });
    this.socket.on("connect_error", (err) => {
      this.connected = false;
      if (!this.socket.active) {
        // Refused by the dashboard's handshake (a second agent with this id is connected, or a wrong token):
        // socket.io does not retry by itself after that.
        opts.log(`dashboard refused this agent: ${err.message}; retrying in ${REFUSED_RETRY_MS / 1000} s`);
        this.retryTimer ??= setTimeout(() => {
          this.retryTimer = null;
          if (!this.closed) this.socket.connect();
        }, REFUSED_RETRY_MS);
        this.retryTimer.unref();
        return;
      }
      const detail = describeConnectError(err);
      void this.refusalReason().then((reason) =>
        opts.log(`cannot reach dashboard: ${detail}${reason ? `: the dashboard says "${reason}"` : ""}`),
      );
    });
  }

  /**
   * A refused websocket upgrade reaches socket.io-client only as "websocket error" with no reason. The same check
   * answers a plain HTTP handshake with the reason in JSON, so ask that way (only after a failed connection).
   */
  private async refusalReason(): Promise<string | null> {
    try {
      const res = await fetch(`${this.opts.dashboardUrl}${AGENT_SOCKET_PATH}/?EIO=4&transport=polling`, {
        headers: { [AGENT_TOKEN_HEADER]: this.opts.agentToken },
        signal: AbortSignal.timeout(3000),
      });
      if (res.status !== 403) return null;
      const body = (await res.json()) as { message?: unknown };
      return typeof body.message === "string" ? body.message.slice(0, 300) : null;
    } catch {
      return null;
    }
  }

  get pendingEvents(): number {
    return this.buffer.length;
  }

  publish(events: readonly LockEvent[], upserts: readonly Lock[], removed: readonly string[]): void {
    this.buffer.push(events, this.connected);
    for (const l of upserts) {
      this.upserts.set(l.id, l);
      this.removed.delete(l.id);
    }
    for (const id of removed) {
      this.upserts.delete(id);
      this.removed.add(id);
    }
    // At most one line per poll, and only when something changed: an operator can see the backlog grow.
    if (!this.connected && events.length > 0) {
      this.opts.log(`dashboard unreachable: ${this.buffer.length} events pending`);
    }
    this.reportDrops();
    void this.flush();
  }

  /** Unreachable now: what was kept beyond the capacity while connected goes (oldest first), logged. */
  private trimBuffer(): void {
    this.buffer.trim(false);
    this.reportDrops();
  }

  private reportDrops(): void {
    if (this.buffer.dropped > this.reportedDrops) {
      this.opts.log(`event buffer full: dropped ${this.buffer.dropped - this.reportedDrops} oldest events`);
      this.reportedDrops = this.buffer.dropped;
    }
  }

  /** Sends what is pending, one message at a time; safe to call often. */
  async flush(): Promise<void> {
    if (this.sending || !this.connected || !(this.opts.ready?.() ?? true)) return;
    this.sending = true;
    const timeout = this.opts.ackTimeoutMs ?? 10_000;
    try {
      while (this.connected) {
        if (this.needSnapshot) {
          const sources = this.opts.sources();
          const locks = this.opts.locks();
          this.upserts.clear();
          this.removed.clear();
          // In bounded parts, each acknowledged before the next: 100,000 locks never travel as one 50 MB message.
          const parts = snapshotParts(locks);
          const at = new Date().toISOString();
          for (const [index, part] of parts.entries()) {
            const ack: AgentAck = await this.socket.timeout(timeout).emitWithAck("agent:snapshot", {
              agentId: this.opts.agentId,
              agentName: this.opts.agentName,
              version: this.opts.version,
              at,
              sources,
              locks: part,
              part: { index, last: index === parts.length - 1 },
            });
            if (!ack.ok) throw new Error(ack.error ?? "snapshot refused");
          }
          this.needSnapshot = false;
          this.markSourcesSent(sources);
        }
        const events = this.buffer.peek(BATCH);
        const sources = this.opts.sources();
        // Node health changes without any lock changing (a Redlock member freezes): the dashboard shows it live.
        const sourcesDue =
          sourcesFingerprint(sources) !== this.sentSources || Date.now() - this.sentSourcesAtMs >= SOURCES_REFRESH_MS;
        if (events.length === 0 && this.upserts.size === 0 && this.removed.size === 0 && !sourcesDue) break;
        // Bounded like a snapshot part: a poll that found 100,000 new locks goes out as many small updates.
        const upserts = snapshotParts([...takeFirst(this.upserts.values(), SNAPSHOT_PART_MAX_LOCKS)])[0]!;
        for (const l of upserts) this.upserts.delete(l.id);
        const removed = [...takeFirst(this.removed.values(), MAX_REMOVED_PER_UPDATE)];
        for (const id of removed) this.removed.delete(id);
        let ack: AgentAck;
        try {
          ack = await this.socket.timeout(timeout).emitWithAck("agent:update", {
            agentId: this.opts.agentId,
            at: new Date().toISOString(),
            sources,
            upserts,
            removed,
            events,
          });
        } catch (err) {
          this.needSnapshot = true; // the delta may be lost: the next message repairs it with a snapshot
          throw err;
        }
        this.buffer.acknowledge(ack.stored);
        this.markSourcesSent(sources);
        if (!ack.ok) {
          this.needSnapshot = true;
          throw new Error(ack.error ?? "update refused");
        }
      }
    } catch (err) {
      this.opts.log(`dashboard did not acknowledge: ${err instanceof Error ? err.message : String(err)}; will retry`);
      setTimeout(() => void this.flush(), 1000).unref();
    } finally {
      this.sending = false;
    }
  }

  private markSourcesSent(sources: readonly SourceStatus[]): void {
    this.sentSources = sourcesFingerprint(sources);
    this.sentSourcesAtMs = Date.now();
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.socket.close();
  }
}

/** socket.io-client's transport errors carry the useful part (the HTTP status, ECONNREFUSED) in `description`. */
export function describeConnectError(err: Error & { description?: unknown }): string {
  const d = err.description as { message?: unknown; error?: { message?: unknown } } | string | undefined;
  const inner = typeof d === "string" ? d : typeof d?.message === "string" ? d.message : d?.error?.message;
  return typeof inner === "string" && inner !== "" && inner !== err.message ? `${err.message} (${inner})` : err.message;
}
