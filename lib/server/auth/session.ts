import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Role } from "./principals";

/** What a signed-in browser carries in its cookie. */
export interface Session {
  name: string;
  role: Role;
  /** Per-session CSRF token, sent back by the page in X-CSRF-Token on every state-changing request. */
  csrf: string;
  /** Expiry, epoch ms. */
  exp: number;
}

export const SESSION_COOKIE = "lockscope_session";
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export function newSession(name: string, role: Role, now = Date.now()): Session {
  return { name, role, csrf: randomBytes(18).toString("base64url"), exp: now + SESSION_TTL_MS };
}

/** `<payload b64url>.<HMAC-SHA256 b64url>`: stateless, so sessions survive nothing but the secret. */
export function signSession(s: Session, secret: Buffer): string {
  const payload = Buffer.from(JSON.stringify(s)).toString("base64url");
  const mac = createHmac("sha256", secret).update(payload).digest("base64url");
  return `${payload}.${mac}`;
}

export function verifySession(cookie: string | undefined, secret: Buffer, now = Date.now()): Session | null {
  if (!cookie || cookie.length > 4096) return null;
  const dot = cookie.indexOf(".");
  if (dot <= 0) return null;
  const payload = cookie.slice(0, dot);
  const mac = Buffer.from(cookie.slice(dot + 1), "base64url");
  const expected = createHmac("sha256", secret).update(payload).digest();
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) return null;
  try {
    const s = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Session;
    if (typeof s.exp !== "number" || s.exp < now) return null;
    if (s.role !== "viewer" && s.role !== "operator" && s.role !== "admin") return null;
    return s;
  } catch {
    return null;
  }
}

/**
 * The Cookie header as name -> value. A value that is not valid percent-encoding is skipped, that cookie only:
 * any site on the same host can set cookies for it, and one bad `%` must not sign anyone out or stop the server.
 */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  if (typeof header !== "string") return out;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    if (!k || Object.hasOwn(out, k)) continue;
    try {
      out[k] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // not percent-encoding: ignored
    }
  }
  return out;
}

export function sessionCookie(value: string, secure: boolean, maxAgeMs = SESSION_TTL_MS): string {
  // HttpOnly: scripts cannot read it; SameSite=Strict: other sites cannot make the browser send it.
  return `${SESSION_COOKIE}=${encodeURIComponent(value)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(
    maxAgeMs / 1000,
  )}${secure ? "; Secure" : ""}`;
}
