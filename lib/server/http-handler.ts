import type { IncomingMessage, ServerResponse } from "node:http";
import type { Principal } from "./auth/authenticator";
import { isJsonContentType } from "./content-type";
import { routeApi } from "./handlers/router";
import type { ApiAnswer, ApiDeps, ApiRequest } from "./handlers/types";

export const MAX_BODY = 64 * 1024;
/** After a 413, what is still read and dropped before closing: closing with unread bytes resets the connection. */
const DRAIN_BYTES = 1024 * 1024;
const DRAIN_MS = 2000;

type PageHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** An error with the HTTP status it deserves: thrown by the body reader, answered by the handler. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const SECURITY_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
};

function send(res: ServerResponse, a: ApiAnswer): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(a.status, {
    ...SECURITY_HEADERS,
    "content-type": a.contentType ?? "application/json; charset=utf-8",
    "cache-control": "no-store",
    ...a.headers,
  });
  res.end(typeof a.body === "string" ? a.body : JSON.stringify(a.body));
}

/**
 * The request target as a URL, or null when it is not one this server serves. `//x` is a path here, never a host
 * (new URL("//x", base) would read it as one), and only origin-form targets are accepted.
 */
export function requestUrl(target: string | undefined): URL | null {
  if (!target || !target.startsWith("/")) return null;
  try {
    return new URL(`http://localhost${target}`);
  } catch {
    return null;
  }
}

/** Every segment of the path decodes (a bad `%` sequence is the client's error, not a crash in a route). */
export function decodablePath(pathname: string): boolean {
  try {
    for (const part of pathname.split("/")) decodeURIComponent(part);
    return true;
  } catch {
    return false;
  }
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    let over = false;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > MAX_BODY) {
        over = true;
        reject(new HttpError(413, `request body larger than ${MAX_BODY} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (!over) resolve(Buffer.concat(chunks).toString("utf8"));
    });
    req.on("error", (err) => reject(new HttpError(400, `request body could not be read: ${err.message}`)));
  });
}

/**
 * 413, then close: the answer goes out whole at once (with its length, so the client can read it while still
 * sending), then what the client still sends is dropped for a moment before the socket closes. Destroying the
 * socket at once, as before, reset the connection and the client never saw why.
 */
function refuseTooLarge(req: IncomingMessage, res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify({ error: `request body larger than ${MAX_BODY} bytes` });
  res.writeHead(413, {
    ...SECURITY_HEADERS,
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "content-length": String(Buffer.byteLength(text)),
    connection: "close",
  });
  res.write(text);
  let done = false;
  let dropped = 0;
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    res.end();
  };
  const timer = setTimeout(finish, DRAIN_MS);
  timer.unref();
  req.on("data", (c: Buffer) => {
    dropped += c.length;
    if (dropped > DRAIN_BYTES) finish();
  });
  req.on("end", finish);
  req.on("error", finish);
  req.resume();
}

/** Pages anyone may load: the sign-in page and the static assets it needs. */
function isPublicPage(pathname: string): boolean {
  return pathname === "/login" || pathname.startsWith("/_next/") || pathname === "/favicon.ico";
}

/**
 * The dashboard's HTTP entry: /api/* goes to the API router with the caller's identity; pages require a signed-in
 * browser (others are sent to /login); everything else goes to Next.js. Nothing a client sends may crash or hang
 * the process: every failure, synchronous or not, becomes an answer.
 */
export function createHttpHandler(deps: ApiDeps, pages: PageHandler | null, log: (line: string) => void) {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = requestUrl(req.url);
    if (!url) return send(res, { status: 400, body: { error: "the request target is not a path" } });
    let principal: Principal | null;
    try {
      principal = await deps.auth.authenticate(req.headers);
    } catch (err) {
      log(`session lookup failed: ${err instanceof Error ? err.message : String(err)}`);
      return send(res, { status: 503, body: { error: "the session store is unavailable; retry" } });
    }
    if (url.pathname === "/api" || url.pathname.startsWith("/api/")) {
      if (!decodablePath(url.pathname)) {
        return send(res, { status: 400, body: { error: "the path is not valid percent-encoding (UTF-8)" } });
      }
      if (hasBody(req) || req.headers["content-type"] !== undefined) {
        if (!isJsonContentType(req.headers["content-type"])) {
          return send(res, { status: 415, body: { error: "send the body as Content-Type: application/json" } });
        }
        if (Number(req.headers["content-length"] ?? 0) > MAX_BODY) return refuseTooLarge(req, res);
      }
      const body: Promise<string> = hasBody(req) ? readBody(req) : Promise.resolve("");
      // The body is read (bounded) whether or not the route wants it, so an oversized one is always a 413.
      body.catch(() => undefined);
      const apiReq: ApiRequest = {
        method: req.method ?? "GET",
        url,
        headers: req.headers,
        principal,
        clientAddress: req.socket.remoteAddress ?? "",
        async json() {
          const text = await body;
          if (text.trim() === "") return null;
          try {
            return JSON.parse(text) as unknown;
          } catch {
            throw new HttpError(400, "the body is not valid JSON");
          }
        },
      };
      let answer: ApiAnswer;
      try {
        await body;
        answer = await routeApi(apiReq, deps);
      } catch (err) {
        if (err instanceof HttpError && err.status === 413) return refuseTooLarge(req, res);
        if (err instanceof HttpError) return send(res, { status: err.status, body: { error: err.message } });
        log(`API error on ${url.pathname}: ${err instanceof Error ? err.message : String(err)}`);
        return send(res, { status: 500, body: { error: "internal error; see the dashboard log" } });
      }
      return send(res, answer);
    }
    if (!pages) {
      return send(res, { status: 404, body: "UI disabled (LOCKSCOPE_UI=off)\n", contentType: "text/plain" });
    }
    if (!principal && !isPublicPage(url.pathname)) {
      const next = encodeURIComponent(url.pathname + url.search);
      res.writeHead(302, { ...SECURITY_HEADERS, location: `/login?next=${next}`, "cache-control": "no-store" });
      res.end();
      return;
    }
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    await pages(req, res);
  };
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      log(`HTTP error on ${String(req.url).slice(0, 200)}: ${err instanceof Error ? err.message : String(err)}`);
      send(res, { status: 500, body: { error: "internal error; see the dashboard log" } });
    });
  };
}
