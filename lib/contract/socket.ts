/**
 * socket.io events between agents, the dashboard and browsers. Payloads are single objects that carry their ids.
 * Agents and browsers use two separate socket.io servers on one HTTP port, each with its own engine.io path and its
 * own message size limit: agents the "/agent" namespace under AGENT_SOCKET_PATH (agent token checked in an HTTP
 * header before the connection is accepted), browsers the "/ui" namespace under UI_SOCKET_PATH.
 */
import type { Lock, LockEvent, SourceStatus } from "./lock";
import type { ReleaseCommand, ReleaseResult } from "./release";
import type { AlertView } from "./alerts";
import type { LockCounts } from "./api";

export const AGENT_NAMESPACE = "/agent";
export const UI_NAMESPACE = "/ui";

/** engine.io path of the browsers' server (socket.io's default, so `io("/ui")` in a page finds it). */
export const UI_SOCKET_PATH = "/socket.io";
/** engine.io path of the agents' server: only requests carrying the agent token get past its HTTP handshake. */
export const AGENT_SOCKET_PATH = "/agent-socket";

/**
 * Largest message a browser may send: browsers send only small messages (socket.io's connect packet, view
 * subscriptions whose fields are at most 4096 characters each), so a small limit costs nothing and bounds what an
 * unauthenticated socket can make the dashboard buffer.
 */
export const UI_MAX_MESSAGE_BYTES = 64 * 1024;
/**
 * Largest message an authenticated agent may send. Snapshots now go in parts (SNAPSHOT_PART_MAX_BYTES), but an update
 * still carries every lock that changed since the last delivered message in one message (about 1 KB a lock: several
 * MB when thousands change at once, or after a slow acknowledgement), so the limit stays where snapshots were sent
 * under before. Only holders of the agent token get to send anything at all (checked before the websocket is
 * accepted). Once updates are bounded too, this can come down to a few MB.
 */
export const AGENT_MAX_MESSAGE_BYTES = 50 * 1024 * 1024;

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
  /**
   * A large snapshot arrives in parts (bounded in locks and bytes): index 0 starts it, `last` ends it, and only then
   * does the dashboard drop the locks the snapshot did not re-send. Absent: the whole snapshot in one message.
   */
  part?: { index: number; last: boolean };
}

/** Bounds of one snapshot part: every message stays far below the dashboard's socket buffer limit. */
export const SNAPSHOT_PART_MAX_LOCKS = 1000;
export const SNAPSHOT_PART_MAX_BYTES = 512 * 1024;

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

/**
 * What a browser shows: the parameters of GET /api/locks (strings, same names and meaning) and the window of rows
 * it draws (offset, limit at most 1000). The dashboard sends that window and the counts, then only their changes.
 */
export interface LockViewQuery {
  q?: string;
  backend?: string;
  library?: string;
  source?: string;
  hazard?: string;
  pattern?: string;
  id?: string;
  sort?: string;
  offset?: number;
  limit?: number;
}

export interface ViewSubscribe {
  /** Chosen by the browser, unique per socket; a new subscribe with the same id replaces the view. */
  viewId: string;
  query: LockViewQuery;
}

export interface ViewAck {
  ok: boolean;
  /** The parameter that is wrong, as GET /api/locks names it in a 400. */
  param?: string;
  error?: string;
}

/**
 * The state of one subscribed view, or its change. `full`: `locks` is the whole window (in order). Otherwise
 * `upserts` are the rows that are new or changed in the window, `removed` the ids that left it, and `order` (when
 * the order changed) the ids of the window's rows in sort order. TTLs are as of `generatedAt`.
 */
export interface ViewUpdate {
  viewId: string;
  /** Increases per view; a browser ignores an update older than the last one it applied. */
  seq: number;
  full: boolean;
  generatedAt: string;
  total: number;
  counts: LockCounts;
  offset: number;
  locks: Lock[];
  removed: string[];
  order?: string[];
}

/** At most this many alerts of each kind in one `alerts:changed` message. */
export const ALERTS_CHANGED_MAX = 20;

export interface ServerToUiEvents {
  /**
   * Alerts raised or resolved by one evaluation: the first ALERTS_CHANGED_MAX of each (a first evaluation over a
   * large fleet can raise thousands), how many there were in all, and how many are open now.
   */
  "alerts:changed": (payload: {
    raised: AlertView[];
    resolved: AlertView[];
    raisedCount?: number;
    resolvedCount?: number;
    open: number;
  }) => void;
  /** Every source's status: on connect, then when it changes (at most a few times a second). */
  "sources:state": (payload: { generatedAt: string; sources: SourceStatus[] }) => void;
  "view:update": (update: ViewUpdate) => void;
  "events:new": (payload: { events: LockEvent[] }) => void;
}

export interface UiToServerEvents {
  "view:subscribe": (sub: ViewSubscribe, ack: (ack: ViewAck) => void) => void;
  "view:unsubscribe": (payload: { viewId: string }) => void;
}
