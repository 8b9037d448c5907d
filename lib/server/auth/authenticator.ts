import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { crossOriginReason } from "./origin";
import { hashPassword, verifyPassword } from "./passwords";
import type { ApiToken, AuthConfig, Role, User } from "./principals";
import { newSession, parseCookies, SESSION_COOKIE, signSession, verifySession, type Session } from "./session";

export interface Principal {
  name: string;
  role: Role;
  via: "session" | "token";
  session?: Session;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Who is asking: a browser session (cookie) or a script (Authorization: Bearer <token>). */
export class Authenticator {
  private constructor(
    private readonly users: User[],
    private readonly tokens: ApiToken[],
    private readonly secret: Buffer,
  ) {}

  /**
   * With no users or tokens configured, an `admin` with a random password is created for this run; the caller
   * prints the password once. The server then listens on loopback only.
   */
  static async create(config: AuthConfig, secret: Buffer): Promise<{ auth: Authenticator; oneTimePassword?: string }> {
    const users = [...config.users];
    let oneTimePassword: string | undefined;
    if (config.generatedAdmin) {
      oneTimePassword = randomBytes(12).toString("base64url");
      users.push({ name: "admin", role: "admin", passwordHash: await hashPassword(oneTimePassword) });
    }
    return { auth: new Authenticator(users, config.tokens, secret), oneTimePassword };
  }

  /** Never throws: whatever a client sends in its headers, the answer is a principal or null (anonymous). */
  fromHeaders(headers: IncomingHttpHeaders): Principal | null {
    try {
      return this.identify(headers);
    } catch {
      return null;
    }
  }

  private identify(headers: IncomingHttpHeaders): Principal | null {
    const authz = headers.authorization;
    if (typeof authz === "string" && /^Bearer\s+/i.test(authz)) {
      const given = authz.replace(/^Bearer\s+/i, "").trim();
      const t = this.tokens.find((x) => sameSecret(x.token, given));
      return t ? { name: t.name, role: t.role, via: "token" } : null;
    }
    const session = verifySession(parseCookies(headers.cookie)[SESSION_COOKIE], this.secret);
    return session ? { name: session.name, role: session.role, via: "session", session } : null;
  }

  /** A signed session cookie value, or null for a wrong name or password (same answer for both). */
  async signIn(name: string, password: string): Promise<{ cookie: string; session: Session } | null> {
    const user = this.users.find((u) => u.name === name);
    // Verify against a dummy hash for unknown names too, so the answer time does not reveal which names exist.
    const ok = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
    if (!user || !ok) return null;
    const session = newSession(user.name, user.role);
    return { cookie: signSession(session, this.secret), session };
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
}

// scrypt of a random password nobody knows: only used to spend the same time on unknown user names.
const DUMMY_HASH = "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
