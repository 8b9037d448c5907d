import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { brotliCompressSync, constants as zlib, gzipSync } from "node:zlib";
import type { Principal } from "./auth/authenticator";
import { isJsonContentType } from "./content-type";
import { auditRefusedReleaseBody, releasePathLockId } from "./handlers/release-api";
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

/** API answers are data, never documents: nothing in them may run, load or be framed. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * Pages: scripts only from this origin or carrying this response's nonce (Next.js puts it on the inline scripts
 * that hydrate the page, reading it from the request's Content-Security-Policy header), so an injected inline
 * script does not run. Inline styles stay allowed: React and the charts write style attributes.
 */
export function pageCsp(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Build-hashed static assets may be cached for ever; everything else a page server sends may be per user. */
function isImmutableAsset(pathname: string): boolean {
  return pathname.startsWith("/_next/static/");
}

/**
 * Pages may show what only a signed-in user may see: no shared cache (Next.js marks prerendered pages
 * `s-maxage=31536000`) may keep them. Whatever cache-control the page handler sets becomes `no-store`.
 */
function forbidCaching(res: ServerResponse): void {
  const setHeader = res.setHeader.bind(res);
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  setHeader("cache-control", "no-store");
  res.setHeader = ((name: string, value: number | string | readonly string[]) =>
    name.toLowerCase() === "cache-control" ? res : setHeader(name, value)) as typeof res.setHeader;
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    const args = rest.map((a) => {
      if (Array.isArray(a)) {
        const flat = a.every((x) => !Array.isArray(x));
        if (!flat) return (a as unknown[][]).filter((kv) => String(kv[0]).toLowerCase() !== "cache-control");
        const out: unknown[] = [];
        for (let i = 0; i + 1 < a.length; i += 2) {
          if (String(a[i]).toLowerCase() !== "cache-control") out.push(a[i], a[i + 1]);
        }
        return out;
      }
      if (a && typeof a === "object") {
        return Object.fromEntries(Object.entries(a).filter(([k]) => k.toLowerCase() !== "cache-control"));
      }
      return a;
    });
    return writeHead(status, ...args);
  }) as typeof res.writeHead;
}

/**
 * The coding of an answer: br when the client lists it, else gzip when it lists that; identity for a client that
 * asks for neither (curl without --compressed). Weights of 0 (`br;q=0`) refuse a coding.
 */
export function chooseEncoding(acceptEncoding: string | string[] | undefined): "br" | "gzip" | null {
  const raw = Array.isArray(acceptEncoding) ? acceptEncoding.join(",") : (acceptEncoding ?? "");
  const accepted = new Set<string>();
  for (const part of raw.toLowerCase().split(",")) {
    const [name, ...params] = part.trim().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    if (name && !(q && Number(q.slice(2)) === 0)) accepted.add(name.trim());
  }
  if (accepted.has("br")) return "br";
  if (accepted.has("gzip") || accepted.has("*")) return "gzip";
  return null;
}

function send(res: ServerResponse, a: ApiAnswer, acceptEncoding?: string | string[]): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = typeof a.body === "string" ? a.body : JSON.stringify(a.body);
  const headers: Record<string, string> = {
    ...SECURITY_HEADERS,
    "content-security-policy": API_CSP,
    "content-type": a.contentType ?? "application/json; charset=utf-8",
    "cache-control": "no-store",
    vary: "accept-encoding",
    ...a.headers,
  };
  // node:zlib (built in, maintained with Node) compresses every answer: a page of 1,000 locks is ~0.5 MB of JSON
  // and a tenth of that compressed. Brotli at quality 4: near gzip's speed, smaller; 11 (the default) is far slower.
  const coding = chooseEncoding(acceptEncoding);
  let body: string | Buffer = text;
  if (coding === "br") {
    body = brotliCompressSync(text, { params: { [zlib.BROTLI_PARAM_QUALITY]: 4 } });
    headers["content-encoding"] = "br";
  } else if (coding === "gzip") {
    body = gzipSync(text, { level: 6 });
    headers["content-encoding"] = "gzip";
  }
  res.writeHead(a.status, headers);
  res.end(body);
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
    "content-security-policy": API_CSP,
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
  return (
    pathname === "/login" ||
    pathname.startsWith("/_next/") ||
    pathname === "/favicon.ico" ||
    // Next.js serves app/icon.svg here and links it from every page, the sign-in page included.
    /^\/icon(?:\.svg|-[\w-]+\.svg)?$/.test(pathname)
  );
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
      // A release refused here (its body never read) is still an attempt with an actor: audited (release-api.ts).
      const releaseId = releasePathLockId(url.pathname);
      const auditRefusal = (message: string) => {
        if (releaseId === null || !principal) return;
        auditRefusedReleaseBody(
          deps,
          { principal, clientAddress: req.socket.remoteAddress ?? "" },
          releaseId,
          message,
        ).catch((err: unknown) =>
          log(`could not audit a refused release: ${err instanceof Error ? err.message : String(err)}`),
        );
      };
      if (hasBody(req) || req.headers["content-type"] !== undefined) {
        if (!isJsonContentType(req.headers["content-type"])) {
          auditRefusal("the body was not sent as Content-Type: application/json (415)");
          return send(res, { status: 415, body: { error: "send the body as Content-Type: application/json" } });
        }
        if (Number(req.headers["content-length"] ?? 0) > MAX_BODY) {
          auditRefusal(`the body was larger than ${MAX_BODY} bytes (413)`);
          return refuseTooLarge(req, res);
        }
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
      const accept = req.headers["accept-encoding"];
      let answer: ApiAnswer;
      try {
        await body;
        answer = await routeApi(apiReq, deps);
      } catch (err) {
        if (err instanceof HttpError && err.status === 413) {
          auditRefusal(`the body was larger than ${MAX_BODY} bytes (413)`);
          return refuseTooLarge(req, res);
        }
        if (err instanceof HttpError) return send(res, { status: err.status, body: { error: err.message } }, accept);
        log(`API error on ${url.pathname}: ${err instanceof Error ? err.message : String(err)}`);
        return send(res, { status: 500, body: { error: "internal error; see the dashboard log" } }, accept);
      }
      return send(res, answer, accept);
    }
    if (!pages) {
      return send(res, { status: 404, body: "UI disabled (LOCKSCOPE_UI=off)\n", contentType: "text/plain" });
    }
    if (!principal && !isPublicPage(url.pathname)) {
      const next = encodeURIComponent(url.pathname + url.search);
      res.writeHead(302, {
        ...SECURITY_HEADERS,
        "content-security-policy": API_CSP,
        location: `/login?next=${next}`,
        "cache-control": "no-store",
      });
      res.end();
      return;
    }
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    // A fresh nonce per response, handed to Next.js the documented way: as the request's CSP header (replacing
    // any the client sent), which it reads to mark its own inline scripts.
    const csp = pageCsp(randomBytes(16).toString("base64"));
    req.headers["content-security-policy"] = csp;
    delete req.headers["content-security-policy-report-only"];
    res.setHeader("content-security-policy", csp);
    if (!isImmutableAsset(url.pathname)) forbidCaching(res);
    await pages(req, res);
  };
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      log(`HTTP error on ${String(req.url).slice(0, 200)}: ${err instanceof Error ? err.message : String(err)}`);
      send(res, { status: 500, body: { error: "internal error; see the dashboard log" } });
    });
  };
}
