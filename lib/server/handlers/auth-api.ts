import { sessionCookie } from "../auth/session";
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

export async function signIn(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const wait = deps.signInLimiter.take(req.clientAddress);
  if (wait > 0)
    return fail(429, "too many sign-in attempts; try again later", { "retry-after": String(Math.ceil(wait / 1000)) });
  const checked = checkBody(loginSchema, await req.json());
  if (!checked.ok) return fail(400, `send JSON { name, password }: ${checked.error}`);
  const result = await deps.auth.signIn(checked.value.name, checked.value.password);
  if (!result) return fail(401, "wrong name or password");
  return {
    status: 200,
    body: { name: result.session.name, role: result.session.role, via: "session", csrfToken: result.session.csrf },
    headers: { "set-cookie": sessionCookie(result.cookie, deps.secureCookies) },
  };
}

export function signOut(_req: ApiRequest, deps: ApiDeps): ApiAnswer {
  return { status: 200, body: { ok: true }, headers: { "set-cookie": sessionCookie("", deps.secureCookies, 0) } };
}
