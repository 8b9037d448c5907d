import type { Socket } from "socket.io";
import type { ReleaseCommand, ReleaseResult } from "../contract/release";
import type { AgentToServerEvents, ServerToAgentEvents } from "../contract/socket";
import { parseReleaseResult } from "../contract/release-answer";

type AgentSocket = Socket<AgentToServerEvents, ServerToAgentEvents>;

/** What the gateway knows of the connection that holds an agent id. */
export interface HeldConnection {
  instanceId: string;
  connected: boolean;
}

export type Admission = { admit: true; replaces: boolean } | { admit: false; error: string };

/**
 * Whether a new connection may take an agent id. Commands for a lock go to the one connection of the agent that
 * reported it, so a second live process with the same id must not take them over (it would answer for servers it
 * may not even watch). The same process reconnecting (same instance id) replaces its old connection: after a network
 * break the dashboard may not have seen the old one close yet, and refusing it would lock the agent out until the
 * ping timeout.
 */
export function admitAgent(agentId: string, held: HeldConnection | undefined, instanceId: string): Admission {
  if (!held || !held.connected) return { admit: true, replaces: false };
  if (held.instanceId === instanceId) return { admit: true, replaces: true };
  return {
    admit: false,
    error:
      `agent id ${agentId} is already connected from another agent process: ` +
      `give each agent its own AGENT_ID (this one retries, and takes over when the other disconnects)`,
  };
}

/** The connected agents, by id: how the dashboard asks the agent that watches a lock to act on it. */
export class AgentGateway {
  private readonly sockets = new Map<string, { socket: AgentSocket; instanceId: string }>();
  /** With several dashboards: asks the one holding the agent's connection (null: no dashboard has it). */
  private remote:
    ((agentId: string, command: ReleaseCommand, timeoutMs: number) => Promise<ReleaseResult | null>) | null = null;

  setRemote(
    remote: (agentId: string, command: ReleaseCommand, timeoutMs: number) => Promise<ReleaseResult | null>,
  ): void {
    this.remote = remote;
  }

  /** Checked in the handshake, before the connection is accepted. */
  admission(agentId: string, instanceId: string): Admission {
    const held = this.sockets.get(agentId);
    return admitAgent(agentId, held && { instanceId: held.instanceId, connected: held.socket.connected }, instanceId);
  }

  /** Registers a connection; an older connection of the same agent process is closed. */
  add(agentId: string, socket: AgentSocket, instanceId: string): void {
    const old = this.sockets.get(agentId);
    this.sockets.set(agentId, { socket, instanceId });
    if (old && old.socket !== socket) old.socket.disconnect(true);
  }

  remove(agentId: string, socket: AgentSocket): void {
    if (this.sockets.get(agentId)?.socket === socket) this.sockets.delete(agentId);
  }

  isConnected(agentId: string): boolean {
    return this.sockets.has(agentId);
  }

  /** Runs a release on the agent, wherever it is connected; the caller writes the audit row. */
  async release(agentId: string, command: ReleaseCommand, timeoutMs = 15_000): Promise<ReleaseResult> {
    if (!this.sockets.has(agentId) && this.remote) {
      // Checked again here: it crossed Redis from another process.
      const answer = await this.remote(agentId, command, timeoutMs);
      if (answer) return checkReleaseAnswer(agentId, answer);
    }
    return this.releaseLocal(agentId, command, timeoutMs);
  }

  /** Runs a release on an agent connected to this dashboard. */
  async releaseLocal(agentId: string, command: ReleaseCommand, timeoutMs = 15_000): Promise<ReleaseResult> {
    const socket = this.sockets.get(agentId)?.socket;
    if (!socket) {
      return { outcome: "error", message: `agent ${agentId} is not connected`, plan: [], perNode: [] };
    }
    let answer: unknown;
    try {
      answer = await socket.timeout(timeoutMs).emitWithAck("release:execute", command);
    } catch {
      return {
        outcome: "error",
        message: `agent ${agentId} did not answer within ${timeoutMs} ms`,
        plan: [],
        perNode: [],
      };
    }
    return checkReleaseAnswer(agentId, answer);
  }
}

/**
 * An agent's answer goes to the operator and the audit log only if it is a well-formed ReleaseResult: anything
 * else is an error, never "released", since nothing proves what happened on the server.
 */
export function checkReleaseAnswer(agentId: string, answer: unknown): ReleaseResult {
  const parsed = parseReleaseResult(answer);
  if (parsed.ok) return parsed.value;
  return {
    outcome: "error",
    message: `agent ${agentId} sent an invalid release answer (${parsed.error}); whether anything was deleted is unknown: look at the lock again`,
    plan: [],
    perNode: [],
  };
}
