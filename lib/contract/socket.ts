/**
 * socket.io events between agents, the dashboard and browsers. Payloads are single objects that carry their ids.
 * Agents use the "/agent" namespace (token in the handshake), browsers the "/ui" namespace.
 */
import type { Lock, LockEvent, SourceStatus } from "./lock";
import type { ReleaseCommand, ReleaseResult } from "./release";
import type { AlertView } from "./alerts";

export const AGENT_NAMESPACE = "/agent";
export const UI_NAMESPACE = "/ui";

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
