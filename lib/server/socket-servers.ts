import { timingSafeEqual } from "node:crypto";
import type { Server as HttpServer } from "node:http";
import { Server, type ServerOptions } from "socket.io";
import {
  AGENT_MAX_MESSAGE_BYTES,
  AGENT_NAMESPACE,
  AGENT_SOCKET_PATH,
  AGENT_TOKEN_HEADER,
  UI_MAX_MESSAGE_BYTES,
  UI_NAMESPACE,
  UI_SOCKET_PATH,
} from "../contract/socket";

/** A socket that has not joined a namespace within this time is closed (socket.io's default is 45 s). */
const CONNECT_TIMEOUT_MS = 10_000;

export function sameSecret(given: unknown, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The two socket.io servers sharing the dashboard's HTTP port. Two, because the message size limit is per engine.io
 * server: agents send large snapshots, browsers only listen.
 * - agents on AGENT_SOCKET_PATH: the agent token is checked on the HTTP request (handshake or websocket upgrade),
 *   before the websocket is accepted, so nobody without it gets a single frame read; then AGENT_MAX_MESSAGE_BYTES.
 * - browsers on UI_SOCKET_PATH (socket.io's default) with UI_MAX_MESSAGE_BYTES: a frame announcing more is refused
 *   from its header (close 1009), before its payload is buffered. Browsers sign in in the /ui namespace.
 * Each serves one namespace; the default namespace is refused on both (unknown ones are refused by socket.io).
 */
export function createSocketServers(
  http: HttpServer,
  agentToken: string,
  adapter?: ServerOptions["adapter"],
): { io: Server; agentIo: Server } {
  const io = new Server(http, {
    path: UI_SOCKET_PATH,
    maxHttpBufferSize: UI_MAX_MESSAGE_BYTES,
    connectTimeout: CONNECT_TIMEOUT_MS,
    serveClient: false,
    ...(adapter ? { adapter } : {}),
  });
  const agentIo = new Server(http, {
    path: AGENT_SOCKET_PATH,
    maxHttpBufferSize: AGENT_MAX_MESSAGE_BYTES,
    connectTimeout: CONNECT_TIMEOUT_MS,
    serveClient: false,
    allowRequest: (req, callback) => {
      if (sameSecret(req.headers[AGENT_TOKEN_HEADER], agentToken)) return callback(null, true);
      callback(`unauthorised: wrong or missing agent token (send it in the ${AGENT_TOKEN_HEADER} header)`, false);
    },
  });
  const refuseDefault = (server: Server, hint: string) =>
    server.use((_socket, next) => next(new Error(`the default namespace is not served: connect to ${hint}`)));
  refuseDefault(io, UI_NAMESPACE);
  refuseDefault(agentIo, AGENT_NAMESPACE);
  return { io, agentIo };
}
