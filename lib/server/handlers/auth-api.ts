import { crossOriginReason } from "../auth/origin";
import { sessionCookie } from "../auth/session";
import { isJsonContentType } from "../content-type";
import { fail, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";
import { checkBody, loginSchema } from "../../contract/requests";

export interface SessionInfo {
  name: string;
  role: string;
  via: "session" | "token";
  /** Present for browser sessions: send it back in X-CSRF-Token on every POST. */
  csrfToken?: string;
}

export function getSession(req: ApiRequest): ApiAnswer {
  if (!req.principal) return fail(401, "not signed in");
  const p = req.principal;
  const body: SessionInfo = {
    name: p.name,
    role: p.role,
    via: p.via,
    ...(p.session ? { csrfToken: p.session.csrf } : {}),
  };
  return { status: 200, body };
}

/**
 * /api/auth/* are refused when cross-site (Origin or Sec-Fetch-Site) or not sent as JSON: another site's form
 * must not sign a browser in as the attacker (login CSRF) or sign it out. A form can send text/plain or
 * urlencoded bodies without a preflight, never application/json.
 */
function refuseCrossSite(req: ApiRequest): ApiAnswer | null {
  const why = crossOriginReason(req.headers);
  if (why) return fail(403, `refused: ${why}`);
  if (!isJsonContentType(req.headers["content-type"])) {
    return fail(415, "send the body as Content-Type: application/json");
  }
  return null;
}

export async function signIn(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const refused = refuseCrossSite(req);
  if (refused) return refused;
  // Only failed attempts count: people signing in and out (or many behind one NAT address) are not guessing.
  const wait = deps.signInLimiter.wait(req.clientAddress);
  if (wait > 0) {
    return fail(429, "too many failed sign-in attempts; try again later", {
      "retry-after": String(Math.ceil(wait / 1000)),
    });
  }
  const checked = checkBody(loginSchema, await req.json());
  if (!checked.ok) return fail(400, `send JSON { name, password }: ${checked.error}`);
  const result = await deps.auth.signIn(checked.value.name, checked.value.password);
  if (!result) {
    deps.signInLimiter.take(req.clientAddress);
    return fail(401, "wrong name or password");
  }
  return {
    status: 200,
    body: { name: result.session.name, role: result.session.role, via: "session", csrfToken: result.session.csrf },
    headers: { "set-cookie": sessionCookie(result.cookie, deps.secureCookies) },
  };
}

/**
 * Revokes the session (on every dashboard sharing the database) and clears the cookie. A signed-in browser must
 * send its CSRF token, as for any write; without a valid session there is nothing to revoke, only a cookie to clear.
 */
export async function signOut(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const refused = refuseCrossSite(req);
  if (refused) return refused;
  await req.json();
  const p = req.principal;
  if (p?.via === "session") {
    const csrf = deps.auth.checkCsrf(p, req.headers);
    if (csrf) return fail(403, `CSRF check failed: ${csrf}`);
    await deps.auth.signOut(p);
  }
  return { status: 200, body: { ok: true }, headers: { "set-cookie": sessionCookie("", deps.secureCookies, 0) } };
}
