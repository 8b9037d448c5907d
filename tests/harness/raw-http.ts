import { connect } from "node:net";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection after (or instead of) answering. */
  closed: boolean;
}

/**
 * One HTTP/1.1 request written byte for byte, so that a test can send what fetch() refuses to build (a bad `%` in
 * the path kept as is, `//`, a header with odd bytes, a body larger than its Content-Length says). Resolves with the
 * parsed answer; rejects when the server answers nothing before `timeoutMs` (a hang) or resets before answering.
 */
export function rawRequest(
  port: number,
  head: { method?: string; target: string; headers?: Record<string, string> },
  body: Buffer | string = "",
  timeoutMs = 10_000,
): Promise<RawAnswer> {
  const payload = typeof body === "string" ? Buffer.from(body) : body;
  const lines = [`${head.method ?? "GET"} ${head.target} HTTP/1.1`, `host: 127.0.0.1:${port}`, "connection: close"];
  for (const [k, v] of Object.entries(head.headers ?? {})) lines.push(`${k}: ${v}`);
  if (payload.length > 0 && !Object.keys(head.headers ?? {}).some((k) => k.toLowerCase() === "content-length")) {
    lines.push(`content-length: ${payload.length}`);
  }
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms to ${head.method ?? "GET"} ${head.target.slice(0, 80)}`));
    }, timeoutMs);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (!m || end < 0) {
        reject(err ?? new Error(`no HTTP answer (got ${JSON.stringify(text.slice(0, 200))})`));
        return;
      }
      const headers: Record<string, string> = {};
      for (const line of text.slice(0, end).split("\r\n").slice(1)) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const raw = text.slice(end + 4);
      const body = /chunked/i.test(headers["transfer-encoding"] ?? "") ? dechunk(raw) : raw;
      resolve({ status: Number(m[1]), headers, body: Buffer.from(body, "latin1").toString("utf8"), closed: true });
    };
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("end", () => finish());
    // A reset after a complete answer still counts as an answer (the server may close while we are writing).
    socket.on("error", (err) => finish(err));
    socket.write(lines.join("\r\n") + "\r\n\r\n");
    if (payload.length > 0) socket.write(payload, () => undefined);
  });
}

/** The payload of a chunked body (`<hex size>\r\n<data>\r\n ... 0\r\n\r\n`). */
function dechunk(raw: string): string {
  let out = "";
  let i = 0;
  while (i < raw.length) {
    const eol = raw.indexOf("\r\n", i);
    if (eol < 0) break;
    const size = parseInt(raw.slice(i, eol), 16);
    if (!(size > 0)) break;
    out += raw.slice(eol + 2, eol + 2 + size);
    i = eol + 2 + size + 2;
  }
  return out;
}
