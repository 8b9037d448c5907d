import type { IncomingHttpHeaders } from "node:http";

/**
 * Why a browser request must be refused as cross-site, or null when it may be this site's own page (or a script,
 * which sends neither header). Origin, when sent, must name this server; `null` (a sandboxed frame, a redirect
 * chain) is refused as well, and so is Sec-Fetch-Site: cross-site.
 */
export function crossOriginReason(headers: IncomingHttpHeaders): string | null {
  const site = headers["sec-fetch-site"];
  if (site === "cross-site") return "cross-site request (Sec-Fetch-Site)";
  const origin = headers.origin;
  if (origin === undefined) return null;
  if (origin === "null") return "request from an opaque origin (Origin: null)";
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return "malformed Origin header";
  }
  if (host === "" || host !== headers.host) return `cross-origin request from ${origin.slice(0, 200)}`;
  return null;
}
