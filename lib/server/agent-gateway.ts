import type { Socket } from "socket.io";
import type { ReleaseCommand, ReleaseResult } from "../contract/release";
import type { AgentToServerEvents, ServerToAgentEvents } from "../contract/socket";

type AgentSocket = Socket<AgentToServerEvents, ServerToAgentEvents>;

/** The connected agents, by id: how the dashboard asks the agent that watches a lock to act on it. */
export class AgentGateway {
  private readonly sockets = new Map<string, AgentSocket>();
  /** With several dashboards: asks the one holding the agent's connection (null: no dashboard has it). */
  private remote:
    ((agentId: string, command: ReleaseCommand, timeoutMs: number) => Promise<ReleaseResult | null>) | null = null;

  setRemote(
    remote: (agentId: string, command: ReleaseCommand, timeoutMs: number) => Promise<ReleaseResult | null>,
  ): void {
    this.remote = remote;
  }

  add(agentId: string, socket: AgentSocket): void {
    this.sockets.set(agentId, socket);
  }

  remove(agentId: string, socket: AgentSocket): void {
    if (this.sockets.get(agentId) === socket) this.sockets.delete(agentId);
  }

  isConnected(agentId: string): boolean {
    return this.sockets.has(agentId);
  }

  /** Runs a release on the agent, wherever it is connected; the caller writes the audit row. */
  async release(agentId: string, command: ReleaseCommand, timeoutMs = 15_000): Promise<ReleaseResult> {
    if (!this.sockets.has(agentId) && this.remote) {
      const answer = await this.remote(agentId, command, timeoutMs);
      if (answer) return answer;
    }
    return this.releaseLocal(agentId, command, timeoutMs);
  }

  /** Runs a release on an agent connected to this dashboard. */
  async releaseLocal(agentId: string, command: ReleaseCommand, timeoutMs = 15_000): Promise<ReleaseResult> {
    const socket = this.sockets.get(agentId);
    if (!socket) {
      return { outcome: "error", message: `agent ${agentId} is not connected`, plan: [], perNode: [] };
    }
    try {
      return await socket.timeout(timeoutMs).emitWithAck("release:execute", command);
    } catch {
      return {
        outcome: "error",
        message: `agent ${agentId} did not answer within ${timeoutMs} ms`,
        plan: [],
        perNode: [],
      };
    }
  }
}
