/**
 * socket.io events between agents, the dashboard and browsers. Payloads are single objects that carry their ids.
 * Agents and browsers use two separate socket.io servers on one HTTP port, each with its own engine.io path and its
 * own message size limit: agents the "/agent" namespace under AGENT_SOCKET_PATH (agent token checked in an HTTP
 * header before the connection is accepted), browsers the "/ui" namespace under UI_SOCKET_PATH.
 */
import type { Lock, LockEvent, SourceStatus } from "./lock";
import type { ReleaseCommand, ReleaseResult } from "./release";
import type { AlertView } from "./alerts";

export const AGENT_NAMESPACE = "/agent";
export const UI_NAMESPACE = "/ui";

/** engine.io path of the browsers' server (socket.io's default, so `io("/ui")` in a page finds it). */
export const UI_SOCKET_PATH = "/socket.io";
/** engine.io path of the agents' server: only requests carrying the agent token get past its HTTP handshake. */
export const AGENT_SOCKET_PATH = "/agent-socket";

/**
 * Largest message a browser may send: browsers send nothing but socket.io's own connect and ping packets, so a
 * small limit costs nothing and bounds what an unauthenticated socket can make the dashboard buffer.
 */
export const UI_MAX_MESSAGE_BYTES = 64 * 1024;
/**
 * Largest message an authenticated agent may send. A snapshot is still one message (several MB at 10k locks, about
 * 1 KB a lock), so this stays at the limit snapshots were sent under before; only holders of the agent token get to
 * send anything at all. Chunked snapshots should keep each message under AGENT_MESSAGE_TARGET_BYTES, after which
 * this limit can come down to a few MB.
 */
export const AGENT_MAX_MESSAGE_BYTES = 50 * 1024 * 1024;
/** What one agent message (a snapshot chunk, an update) should stay under. */
export const AGENT_MESSAGE_TARGET_BYTES = 1024 * 1024;

/**
 * HTTP header of the agent's connection request, checked before the websocket is accepted (socket.io's `auth`
 * object arrives only after the connection is up, too late to keep a large frame from being read).
 */
export const AGENT_TOKEN_HEADER = "x-lockscope-agent-token";

/** socket.io `auth` of an agent's connection. */
export interface AgentHandshake {
  token: string;
  agentId: string;
  /**
   * Random per agent process (and kept across its reconnects): a reconnect of the same process may replace its own connection that the dashboard has
   * not yet seen close; a different process with the same agent id is refused while the first is connected.
   */
  instanceId: string;
}

/** Sent on every (re)connect: replaces everything the dashboard holds for this agent. */
export interface AgentSnapshot {
  agentId: string;
  agentName: string;
  version: string;
  at: string;
  sources: SourceStatus[];
  locks: Lock[];
}

/** Sent after each poll: state changes since the last delivered message plus buffered events. */
export interface AgentUpdate {
  agentId: string;
  at: string;
  sources: SourceStatus[];
  upserts: Lock[];
  removed: string[];
  events: LockEvent[];
}

export interface AgentAck {
  ok: boolean;
  /** Ids of the events now stored (including ones stored before: the store is idempotent). */
  stored: string[];
  error?: string;
}

export interface AgentToServerEvents {
  "agent:snapshot": (snapshot: AgentSnapshot, ack: (ack: AgentAck) => void) => void;
  "agent:update": (update: AgentUpdate, ack: (ack: AgentAck) => void) => void;
}

/** Force-release runs on the agent: it holds the connections to the watched servers, the dashboard may not. */
export interface ServerToAgentEvents {
  "release:execute": (command: ReleaseCommand, ack: (result: ReleaseResult) => void) => void;
}

export interface UiState {
  generatedAt: string;
  locks: Lock[];
  sources: SourceStatus[];
}

export interface UiDelta {
  generatedAt: string;
  upserts: Lock[];
  removed: string[];
  sources: SourceStatus[];
}

export interface ServerToUiEvents {
  "alerts:changed": (payload: { raised: AlertView[]; resolved: AlertView[]; open: number }) => void;
  "locks:state": (state: UiState) => void;
  "locks:delta": (delta: UiDelta) => void;
  "events:new": (payload: { events: LockEvent[] }) => void;
}

export type UiToServerEvents = Record<string, never>;
