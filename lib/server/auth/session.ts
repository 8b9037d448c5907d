import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Role, User } from "./principals";

/**
 * A signed-in browser's session, kept server-side (the Session table). The cookie carries only the signed id, so
 * logout, a removed user, a changed role or a changed password take effect on the next request.
 */
export interface Session {
  id: string;
  name: string;
  role: Role;
  /** Per-session CSRF token, sent back by the page in X-CSRF-Token on every state-changing request. */
  csrf: string;
  /** A digest of the user's password hash at sign-in: a new password (or a new one-time admin) ends the session. */
  credential: string;
  /** Epoch ms. */
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
}

/** Where sessions are kept: the history database, so that every dashboard sharing it sees a logout. */
export interface SessionStore {
  createSession(s: Session): Promise<void>;
  findSession(id: string): Promise<Session | null>;
  revokeSession(id: string, at: number): Promise<void>;
  /**
   * Sessions created at or after `since` (epoch ms) that are neither revoked nor expired at `now`: the whole live
   * set at start (since 0), then what other dashboards signed in, read about once a second.
   */
  sessionsCreatedSince(since: number, now: number): Promise<Session[]>;
  /** Ids of sessions revoked at or after `since` (epoch ms): how another dashboard's logout reaches this one. */
  sessionsRevokedSince(since: number): Promise<string[]>;
  /** Deletes sessions that expired before `before`; returns how many. */
  pruneSessions(before: number): Promise<number>;
}

export const SESSION_COOKIE = "lockscope_session";
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

const ID = /^[A-Za-z0-9_-]{32}$/;

export function credentialOf(user: Pick<User, "passwordHash">): string {
  return createHash("sha256").update(user.passwordHash).digest("base64url");
}

export function newSession(user: User, now = Date.now()): Session {
  return {
    id: randomBytes(24).toString("base64url"),
    name: user.name,
    role: user.role,
    csrf: randomBytes(18).toString("base64url"),
    credential: credentialOf(user),
    createdAt: now,
    expiresAt: now + SESSION_TTL_MS,
    revokedAt: null,
  };
}

/** `<session id>.<HMAC-SHA256 of the id, b64url>`: the signature keeps guessed ids from reaching the database. */
export function signSessionId(id: string, secret: Buffer): string {
  return `${id}.${createHmac("sha256", secret).update(id).digest("base64url")}`;
}

/** The session id of a well-signed cookie value, else null. */
export function verifySessionId(cookie: string | undefined, secret: Buffer): string | null {
  if (typeof cookie !== "string" || cookie.length > 200) return null;
  const dot = cookie.indexOf(".");
  if (dot <= 0) return null;
  const id = cookie.slice(0, dot);
  if (!ID.test(id)) return null;
  const mac = Buffer.from(cookie.slice(dot + 1), "base64url");
  const expected = createHmac("sha256", secret).update(id).digest();
  return mac.length === expected.length && timingSafeEqual(mac, expected) ? id : null;
}

export type SessionCheck =
  | { ok: true; name: string; role: Role }
  | { ok: false; reason: "revoked" | "expired" | "unknown-user" | "credential-changed" };

/**
 * Whether a stored session still signs its browser in, against the user table as it is now: a user removed from
 * USERS or USERS_FILE is refused, a changed role applies at once, a changed password ends the session.
 */
export function checkSession(s: Session, users: readonly User[], now = Date.now()): SessionCheck {
  if (s.revokedAt !== null) return { ok: false, reason: "revoked" };
  if (s.expiresAt <= now) return { ok: false, reason: "expired" };
  const user = users.find((u) => u.name === s.name);
  if (!user) return { ok: false, reason: "unknown-user" };
  if (credentialOf(user) !== s.credential) return { ok: false, reason: "credential-changed" };
  return { ok: true, name: user.name, role: user.role };
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
