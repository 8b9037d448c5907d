import type { IncomingMessage, ServerResponse } from "node:http";
import { brotliCompressSync, constants as zlib, gzipSync } from "node:zlib";
import { routeApi } from "./handlers/router";
import type { ApiAnswer, ApiDeps, ApiRequest } from "./handlers/types";

const MAX_BODY = 64 * 1024;

type PageHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error(`request body larger than ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

const SECURITY_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
};

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
  const text = typeof a.body === "string" ? a.body : JSON.stringify(a.body);
  const headers: Record<string, string> = {
    ...SECURITY_HEADERS,
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

/** Pages anyone may load: the sign-in page and the static assets it needs. */
function isPublicPage(pathname: string): boolean {
  return pathname === "/login" || pathname.startsWith("/_next/") || pathname === "/favicon.ico";
}

/**
 * The dashboard's HTTP entry: /api/* goes to the API router with the caller's identity; pages require a signed-in
 * browser (others are sent to /login); everything else goes to Next.js.
 */
export function createHttpHandler(deps: ApiDeps, pages: PageHandler | null, log: (line: string) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const principal = deps.auth.fromHeaders(req.headers);
    if (url.pathname === "/api" || url.pathname.startsWith("/api/")) {
      let bodyText: Promise<string> | null = null;
      const apiReq: ApiRequest = {
        method: req.method ?? "GET",
        url,
        headers: req.headers,
        principal,
        clientAddress: req.socket.remoteAddress ?? "",
        async json() {
          bodyText ??= readBody(req);
          const text = await bodyText;
          if (text.trim() === "") return null;
          try {
            return JSON.parse(text) as unknown;
          } catch {
            throw new Error("the body is not valid JSON");
          }
        },
      };
      const accept = req.headers["accept-encoding"];
      routeApi(apiReq, deps)
        .then((answer) => send(res, answer, accept))
        .catch((err: unknown) => {
          const message = err instanceof Error ? err.message : String(err);
          if (/body/.test(message)) return send(res, { status: 400, body: { error: message } }, accept);
          log(`API error on ${url.pathname}: ${message}`);
          send(res, { status: 500, body: { error: "internal error; see the dashboard log" } }, accept);
        });
      return;
    }
    if (!pages) {
      send(res, { status: 404, body: "UI disabled (LOCKSCOPE_UI=off)\n", contentType: "text/plain" });
      return;
    }
    if (!principal && !isPublicPage(url.pathname)) {
      const next = encodeURIComponent(url.pathname + url.search);
      res.writeHead(302, { ...SECURITY_HEADERS, location: `/login?next=${next}`, "cache-control": "no-store" });
      res.end();
      return;
    }
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    void pages(req, res);
  };
}
