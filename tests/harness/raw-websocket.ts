import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";

/**
 * A websocket client written on a bare TCP socket, for attacks a well-behaved client library will not make: it
 * announces one huge frame and streams its payload, the way the memory blow-up of issue 10 was done.
 */
export interface RawUpgrade {
  /** HTTP status of the answer to the upgrade request (101 when the websocket was accepted). */
  status: number;
  /** The answer's head and whatever body came before the server closed (for a refused upgrade). */
  response: string;
  socket: Socket;
}

export function rawUpgrade(port: number, path: string, headers: Record<string, string> = {}): Promise<RawUpgrade> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = () => {
      if (settled) return;
      const text = buf.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!m) return;
      const headEnd = text.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const status = Number(m[1]);
      // A refused upgrade is answered and closed: wait for the close to have the whole body.
      if (status !== 101 && !socket.destroyed && !socket.readableEnded) return;
      settled = true;
      socket.removeAllListeners("data");
      if (status === 101) socket.unshift(buf.subarray(headEnd + 4));
      resolve({ status, response: text, socket });
    };
    socket.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      finish();
    });
    socket.on("end", finish);
    socket.on("close", () => {
      finish();
      if (!settled) reject(new Error(`connection closed without an HTTP answer: ${JSON.stringify(buf.toString())}`));
    });
    socket.on("error", (err) => {
      if (!settled) reject(err);
    });
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("");
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`,
    );
  });
}

/**
 * Announces one binary frame of `size` bytes and streams it. Resolves with the close code the server sent (1009 is
 * "message too big"), or null if the server read the whole frame without closing within `afterMs`.
 */
export async function sendHugeFrame(socket: Socket, size: number, afterMs = 3000): Promise<number | null> {
  let closeCode: number | null = null;
  onCloseFrame(socket, (code) => (closeCode = code));
  const closed = new Promise<void>((resolve) => {
    socket.once("close", () => resolve());
    socket.on("error", () => resolve());
  });
  const header = Buffer.alloc(14);
  header[0] = 0x82; // FIN, binary
  header[1] = 0x80 | 127; // masked, 64-bit length
  header.writeBigUInt64BE(BigInt(size), 2);
  randomBytes(4).copy(header, 10);
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  let open = true;
  void closed.then(() => (open = false));
  const write = (b: Buffer) =>
    new Promise<void>((resolve) => {
      if (!open || socket.destroyed) return resolve();
      if (socket.write(b)) return resolve();
      socket.once("drain", () => resolve());
      void closed.then(() => resolve());
    });
  await write(header);
  for (let sent = 0; sent < size && open; sent += chunk.length) {
    await write(sent + chunk.length <= size ? chunk : chunk.subarray(0, size - sent));
  }
  await Promise.race([closed, new Promise((r) => setTimeout(r, afterMs))]);
  socket.destroy();
  return closeCode;
}

/** Calls `onClose` with the code of the close frame the server sends (server frames are unmasked). */
export function onCloseFrame(socket: Socket, onClose: (code: number) => void): void {
  let incoming = Buffer.alloc(0);
  socket.on("data", (d: Buffer) => {
    incoming = Buffer.concat([incoming, d]);
    let at = 0;
    while (incoming.length - at >= 2) {
      const opcode = incoming[at]! & 0x0f;
      let len = incoming[at + 1]! & 0x7f;
      let head = 2;
      if (len === 126) {
        if (incoming.length - at < 4) break;
        len = incoming.readUInt16BE(at + 2);
        head = 4;
      } else if (len === 127) {
        if (incoming.length - at < 10) break;
        len = Number(incoming.readBigUInt64BE(at + 2));
        head = 10;
      }
      if (incoming.length - at < head + len) break;
      // Opcode 8 is close; its payload starts with the 2-byte code.
      if (opcode === 8) onClose(len >= 2 ? incoming.readUInt16BE(at + head) : 1005);
      at += head + len;
    }
    incoming = incoming.subarray(at);
  });
}

/** The pid of the node process that runs the script under `tsx` (tsx starts it as a child). */
export function scriptPid(tsxPid: number): number {
  const children = readFileSync(`/proc/${tsxPid}/task/${tsxPid}/children`, "utf8").trim().split(/\s+/).map(Number);
  for (const pid of children) {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    if (cmdline.includes("tsx") && cmdline.includes("loader")) return pid;
  }
  throw new Error(`no node child of tsx ${tsxPid} (children: ${children.join(", ")})`);
}

/** Peak resident memory of a process so far (VmHWM), in bytes. */
export function peakRssBytes(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmHWM for ${pid}`);
  return Number(m[1]) * 1024;
}
