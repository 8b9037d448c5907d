import { io } from "socket.io-client";
import { UI_NAMESPACE } from "../../lib/contract/socket";

/** The browsers' socket.io handshake at `baseUrl` with these cookies: resolves "connected" or the refusal message. */
export function uiHandshake(baseUrl: string, cookie: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = io(`${baseUrl}${UI_NAMESPACE}`, {
      extraHeaders: { cookie },
      transports: ["websocket"],
      reconnection: false,
      timeout: 5000,
    });
    socket.on("connect", () => {
      socket.close();
      resolve("connected");
    });
    socket.on("connect_error", (err) => {
      socket.close();
      resolve(err.message);
    });
  });
}
