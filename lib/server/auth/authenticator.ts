import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { crossOriginReason } from "./origin";
import { hashPassword, verifyPassword } from "./passwords";
import type { ApiToken, AuthConfig, Role, User } from "./principals";
import {
  checkSession,
  newSession,
  parseCookies,
  SESSION_COOKIE,
  signSessionId,
  verifySessionId,
  type Session,
  type SessionStore,
} from "./session";

export interface Principal {
  name: string;
  role: Role;
  via: "session" | "token";
  session?: Session;
}

export interface AuthenticatorOptions {
  /** How often other dashboards' logouts are read from the store. */
  revocationPollMs?: number;
  /** Re-reads the user table (USERS_FILE edited in place); called when `usersChanged` says so. */
  reloadUsers?: () => User[];
  usersChanged?: () => boolean;
  log?: (line: string) => void;
  now?: () => number;
}

/** Sessions kept in memory per dashboard; far more than the people who sign in, few enough to stay small. */
const MAX_CACHED = 10_000;
/** Overlap of successive revocation reads, for clocks of dashboards sharing one database that disagree a little. */
const POLL_OVERLAP_MS = 5000;
/** Expired session records are deleted this often (they refuse themselves before that). */
const PRUNE_EVERY_MS = 3_600_000;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Who is asking: a browser session (cookie) or a script (Authorization: Bearer <token>). Sessions are records in
 * the store, mirrored here (all live ones, read at start, then new sign-ins and revocations about once a second): a
 * logout on this dashboard takes effect at once, one on another dashboard sharing the database within
 * `revocationPollMs`, and every check compares the session with the user table as it is now.
 */
export class Authenticator {
  private readonly cache = new Map<string, Session>();
  private lastPoll: number;
  private lastPrune = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;

  private constructor(
    private users: User[],
    private readonly tokens: ApiToken[],
    private readonly secret: Buffer,
    private readonly sessions: SessionStore,
    private readonly opts: AuthenticatorOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.lastPoll = this.now();
  }

  /**
   * With no users or tokens configured, an `admin` with a random password is created for this run; the caller
   * prints the password once. The server then listens on loopback only. Sessions of an earlier run's one-time
   * admin end with it: the password hash they were made with is gone.
   */
  static async create(
    config: AuthConfig,
    secret: Buffer,
    sessions: SessionStore,
    opts: AuthenticatorOptions = {},
  ): Promise<{ auth: Authenticator; oneTimePassword?: string }> {
    const users = [...config.users];
    let oneTimePassword: string | undefined;
    if (config.generatedAdmin) {
      oneTimePassword = randomBytes(12).toString("base64url");
      users.push({ name: "admin", role: "admin", passwordHash: await hashPassword(oneTimePassword) });
    }
    return { auth: new Authenticator(users, config.tokens, secret, sessions, opts), oneTimePassword };
  }

  /**
   * Reads the live sessions into memory, before the server listens: the socket.io handshake (fromHeaders, no I/O)
   * then knows a browser that signed in before a restart, and its reconnecting tab keeps its live view.
   */
  async load(): Promise<void> {
    const now = this.now();
    for (const s of await this.sessions.sessionsCreatedSince(0, now)) this.remember(s);
    this.lastPoll = now;
  }

  /** Starts reading sign-ins and revocations (and a changed USERS_FILE) periodically; stop() ends it. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.refresh(), this.opts.revocationPollMs ?? 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One refresh: forget sessions another dashboard revoked, re-read a changed user table, prune old records. */
  async refresh(): Promise<void> {
    const started = this.now();
    try {
      if (this.opts.usersChanged?.() && this.opts.reloadUsers) {
        this.users = this.opts.reloadUsers();
        this.opts.log?.(`user table re-read: ${this.users.length} users`);
      }
    } catch (err) {
      // Keep the table we have: a half-edited file must not sign everyone out, nor let anyone new in.
      this.opts.log?.(`could not re-read the user table: ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      const since = this.lastPoll - POLL_OVERLAP_MS;
      // Sign-ins on other dashboards first, then revocations: a session made and revoked in between ends revoked.
      for (const s of await this.sessions.sessionsCreatedSince(since, started)) {
        if (!this.cache.has(s.id)) this.remember(s);
      }
      for (const id of await this.sessions.sessionsRevokedSince(since)) this.cache.delete(id);
      this.lastPoll = started;
      for (const [id, s] of this.cache) if (s.expiresAt <= started) this.cache.delete(id);
      if (started - this.lastPrune >= PRUNE_EVERY_MS) {
        this.lastPrune = started;
        await this.sessions.pruneSessions(started);
      }
    } catch (err) {
      this.opts.log?.(`could not read revoked sessions: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * From what this dashboard already knows (no I/O), for the socket.io handshake. Never throws: whatever a client
   * sends in its headers, the answer is a principal or null (anonymous).
   */
  fromHeaders(headers: IncomingHttpHeaders): Principal | null {
    try {
      const token = this.fromToken(headers);
      if (token !== undefined) return token;
      const id = this.sessionId(headers);
      const s = id ? this.cache.get(id) : undefined;
      return s ? this.principalOf(s) : null;
    } catch {
      return null;
    }
  }

  /**
   * As fromHeaders, reading a session this dashboard has not seen yet (signed in on another dashboard, or before a
   * restart) from the store. Rejects only when the store fails.
   */
  async authenticate(headers: IncomingHttpHeaders): Promise<Principal | null> {
    let id: string | null;
    try {
      const token = this.fromToken(headers);
      if (token !== undefined) return token;
      id = this.sessionId(headers);
    } catch {
      return null;
    }
    if (!id) return null;
    let s = this.cache.get(id);
    if (!s) {
      const found = await this.sessions.findSession(id);
      if (!found) return null;
      s = found;
      this.remember(s);
    }
    return this.principalOf(s);
  }

  /** A signed session cookie value, or null for a wrong name or password (same answer for both). */
  async signIn(name: string, password: string): Promise<{ cookie: string; session: Session } | null> {
    const user = this.users.find((u) => u.name === name);
    // Verify against a dummy hash for unknown names too, so the answer time does not reveal which names exist.
    const ok = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
    if (!user || !ok) return null;
    const session = newSession(user, this.now());
    await this.sessions.createSession(session);
    this.remember(session);
    return { cookie: signSessionId(session.id, this.secret), session };
  }

  /** Ends a browser session everywhere: this dashboard at once, others sharing the store at their next poll. */
  async signOut(p: Principal): Promise<void> {
    if (!p.session) return;
    const at = this.now();
    this.cache.set(p.session.id, { ...p.session, revokedAt: at });
    await this.sessions.revokeSession(p.session.id, at);
  }

  /**
   * CSRF for cookie-authenticated writes: the X-CSRF-Token header must match the session's token, and an Origin
   * header, when the browser sends one, must be this server. Token-authenticated scripts carry no ambient
   * credential, so they need neither.
   */
  checkCsrf(p: Principal, headers: IncomingHttpHeaders): string | null {
    if (p.via === "token") return null;
    const given = headers["x-csrf-token"];
    if (typeof given !== "string" || !p.session || !sameSecret(given, p.session.csrf)) {
      return "missing or wrong X-CSRF-Token header";
    }
    return crossOriginReason(headers);
  }

  /** undefined: no bearer token sent (look for a cookie); null: a wrong token. */
  private fromToken(headers: IncomingHttpHeaders): Principal | null | undefined {
    const authz = headers.authorization;
    if (typeof authz !== "string" || !/^Bearer\s+/i.test(authz)) return undefined;
    const given = authz.replace(/^Bearer\s+/i, "").trim();
    const t = this.tokens.find((x) => sameSecret(x.token, given));
    return t ? { name: t.name, role: t.role, via: "token" } : null;
  }

  private sessionId(headers: IncomingHttpHeaders): string | null {
    return verifySessionId(parseCookies(headers.cookie)[SESSION_COOKIE], this.secret);
  }

  private principalOf(s: Session): Principal | null {
    const check = checkSession(s, this.users, this.now());
    return check.ok ? { name: check.name, role: check.role, via: "session", session: s } : null;
  }

  private remember(s: Session): void {
    if (this.cache.size >= MAX_CACHED) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(s.id, s);
  }
}

// scrypt of a random password nobody knows: only used to spend the same time on unknown user names.
const DUMMY_HASH = "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
