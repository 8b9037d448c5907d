import { io, type Socket } from "socket.io-client";
import { AGENT_NAMESPACE, AGENT_SOCKET_PATH, AGENT_TOKEN_HEADER } from "../../lib/contract/socket";
import { TEST_AGENT_TOKEN } from "./stack";

/** Untyped on purpose: tests send what a broken or hostile agent would. */
export type RawAgentSocket = Socket;

/** A socket.io connection that speaks as an agent, the way agent/transport/dashboard-link.ts connects. */
export function connectRawAgent(
  dashboardUrl: string,
  opts: { agentId: string; instanceId?: string; token?: string; headerToken?: string | null; reconnection?: boolean },
): RawAgentSocket {
  const token = opts.token ?? TEST_AGENT_TOKEN;
  const headerToken = opts.headerToken === undefined ? token : opts.headerToken;
  return io(`${dashboardUrl}${AGENT_NAMESPACE}`, {
    path: AGENT_SOCKET_PATH,
    extraHeaders: headerToken === null ? {} : { [AGENT_TOKEN_HEADER]: headerToken },
    auth: { token, agentId: opts.agentId, instanceId: opts.instanceId ?? `instance-of-${opts.agentId}` },
    transports: ["websocket"],
    reconnection: opts.reconnection ?? false,
    forceNew: true,
  });
}

/** Resolves on connect, rejects with the connect_error (whose message is the dashboard's reason). */
export function connected(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.connected) return resolve();
    socket.once("connect", () => resolve());
    socket.once("connect_error", reject);
  });
}
