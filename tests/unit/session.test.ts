import { describe, expect, it } from "vitest";
import { Authenticator } from "../../lib/server/auth/authenticator";
import type { User } from "../../lib/server/auth/principals";
import {
  checkSession,
  newSession,
  parseCookies,
  SESSION_COOKIE,
  signSessionId,
  verifySessionId,
  type Session,
  type SessionStore,
} from "../../lib/server/auth/session";

const SECRET = Buffer.alloc(48, 7);
const ALICE: User = { name: "alice", role: "operator", passwordHash: "scrypt$16384$8$1$c2FsdA$aGFzaA" };

/** The SessionStore port in memory: what two dashboards sharing one database would both see. */
class MemorySessions implements SessionStore {
  readonly rows = new Map<string, Session>();
  async createSession(s: Session) {
    this.rows.set(s.id, { ...s });
  }
  async findSession(id: string) {
    const s = this.rows.get(id);
    return s ? { ...s } : null;
  }
  async revokeSession(id: string, at: number) {
    const s = this.rows.get(id);
    if (s && s.revokedAt === null) s.revokedAt = at;
  }
  async sessionsCreatedSince(since: number, now: number) {
    return [...this.rows.values()]
      .filter((s) => s.createdAt >= since && s.revokedAt === null && s.expiresAt > now)
      .map((s) => ({ ...s }));
  }
  async sessionsRevokedSince(since: number) {
    return [...this.rows.values()].filter((s) => s.revokedAt !== null && s.revokedAt >= since).map((s) => s.id);
  }
  async pruneSessions(before: number) {
    let n = 0;
    for (const [id, s] of this.rows) if (s.expiresAt < before) n += Number(this.rows.delete(id));
    return n;
  }
}

describe("session cookies", () => {
  it("carry only a signed id, refused when tampered with or signed with another key", () => {
    const s = newSession(ALICE, 0);
    const cookie = signSessionId(s.id, SECRET);
    expect(cookie).not.toContain("alice");
    expect(verifySessionId(cookie, SECRET)).toBe(s.id);
    expect(verifySessionId(cookie, Buffer.alloc(48, 8))).toBeNull();
    // Another last character of the id (a random id ends in "A" once in 64 runs: "A" would leave it untouched).
    const tampered = `${s.id.slice(0, -1)}${s.id.endsWith("A") ? "B" : "A"}`;
    expect(tampered).not.toBe(s.id);
    expect(verifySessionId(`${tampered}.${cookie.split(".")[1]}`, SECRET)).toBeNull();
    for (const bad of [undefined, "", ".", "abc", `${s.id}.`, `${s.id}.%%`, "x".repeat(300)]) {
      expect(verifySessionId(bad, SECRET)).toBeNull();
    }
  });

  it("parseCookies skips a value that is not percent-encoding, that cookie only", () => {
    expect(parseCookies("theme=100%; a=%zz; b=%c0%ae; lockscope_session=ok%2Evalue; c=1")).toEqual({
      lockscope_session: "ok.value",
      c: "1",
    });
    expect(parseCookies(undefined)).toEqual({});
    expect(parseCookies("__proto__=x; =y; ;;").__proto__).toBe("x");
  });
});

describe("checkSession against the current user table", () => {
  const s = newSession(ALICE, 1000);
  it.each<[string, Session, User[], ReturnType<typeof checkSession>]>([
    ["valid", s, [ALICE], { ok: true, name: "alice", role: "operator" }],
    ["revoked", { ...s, revokedAt: 2000 }, [ALICE], { ok: false, reason: "revoked" }],
    ["expired", s, [ALICE], { ok: false, reason: "expired" }],
    ["user removed", s, [], { ok: false, reason: "unknown-user" }],
    ["role lowered", s, [{ ...ALICE, role: "viewer" }], { ok: true, name: "alice", role: "viewer" }],
    [
      "password changed",
      s,
      [{ ...ALICE, passwordHash: "scrypt$1$1$1$x$y" }],
      { ok: false, reason: "credential-changed" },
    ],
  ])("%s", (what, session, users, expected) => {
    const now = what === "expired" ? s.expiresAt : 5000;
    expect(checkSession(session, users, now)).toEqual(expected);
  });
});

describe("Authenticator sessions", () => {
  async function signedIn(store: MemorySessions, clock: { t: number }, users: User[] = [ALICE]) {
    const { auth } = await Authenticator.create({ users, tokens: [], generatedAdmin: false }, SECRET, store, {
      now: () => clock.t,
    });
    return auth;
  }

  async function cookieFor(auth: Authenticator, store: MemorySessions): Promise<string> {
    // signIn verifies a real password; a record made the same way stands in for it here.
    const s = newSession(ALICE, 0);
    await store.createSession(s);
    await auth.authenticate({ cookie: `${SESSION_COOKIE}=${signSessionId(s.id, SECRET)}` });
    return `${SESSION_COOKIE}=${signSessionId(s.id, SECRET)}`;
  }

  it("logout ends the session at once on this dashboard, and within one poll on another sharing the store", async () => {
    const store = new MemorySessions();
    const clock = { t: 10_000 };
    const a = await signedIn(store, clock);
    const b = await signedIn(store, clock);
    const cookie = await cookieFor(a, store);
    expect((await b.authenticate({ cookie }))?.name).toBe("alice");
    expect(b.fromHeaders({ cookie })?.name).toBe("alice");

    const p = await a.authenticate({ cookie });
    clock.t += 100;
    await a.signOut(p!);
    expect(a.fromHeaders({ cookie })).toBeNull();
    expect(await a.authenticate({ cookie })).toBeNull();
    // B still has it cached until its next revocation read; then it is gone there too.
    await b.refresh();
    expect(b.fromHeaders({ cookie })).toBeNull();
    expect(await b.authenticate({ cookie })).toBeNull();
  });

  it("knows, without I/O, sessions made before a restart (load) and on another dashboard (refresh)", async () => {
    const store = new MemorySessions();
    const clock = { t: 10_000 };
    const s = newSession(ALICE, clock.t);
    await store.createSession(s);
    const cookie = `${SESSION_COOKIE}=${signSessionId(s.id, SECRET)}`;
    const restarted = await signedIn(store, clock);
    expect(restarted.fromHeaders({ cookie })).toBeNull();
    await restarted.load();
    expect(restarted.fromHeaders({ cookie })?.name).toBe("alice");

    const other = newSession(ALICE, clock.t + 500);
    clock.t += 1000;
    await store.createSession(other);
    const otherCookie = `${SESSION_COOKIE}=${signSessionId(other.id, SECRET)}`;
    expect(restarted.fromHeaders({ cookie: otherCookie })).toBeNull();
    await restarted.refresh();
    expect(restarted.fromHeaders({ cookie: otherCookie })?.name).toBe("alice");
    // Made and revoked between two reads: it ends revoked.
    const brief = newSession(ALICE, clock.t + 100);
    await store.createSession(brief);
    await store.revokeSession(brief.id, clock.t + 200);
    clock.t += 1000;
    await restarted.refresh();
    expect(restarted.fromHeaders({ cookie: `${SESSION_COOKIE}=${signSessionId(brief.id, SECRET)}` })).toBeNull();
  });

  it("refuses a cookie for a user no longer in the table, and applies a changed role", async () => {
    const store = new MemorySessions();
    const clock = { t: 10_000 };
    let users: User[] = [ALICE];
    let changed = false;
    const { auth } = await Authenticator.create({ users, tokens: [], generatedAdmin: false }, SECRET, store, {
      now: () => clock.t,
      usersChanged: () => changed,
      reloadUsers: () => users,
    });
    const cookie = await cookieFor(auth, store);
    expect((await auth.authenticate({ cookie }))?.role).toBe("operator");
    users = [{ ...ALICE, role: "viewer" }];
    changed = true;
    await auth.refresh();
    expect((await auth.authenticate({ cookie }))?.role).toBe("viewer");
    users = [];
    await auth.refresh();
    expect(await auth.authenticate({ cookie })).toBeNull();
    expect(auth.fromHeaders({ cookie })).toBeNull();
  });

  it("keeps the user table when re-reading it fails", async () => {
    const store = new MemorySessions();
    const lines: string[] = [];
    const { auth } = await Authenticator.create({ users: [ALICE], tokens: [], generatedAdmin: false }, SECRET, store, {
      now: () => 10_000,
      usersChanged: () => true,
      reloadUsers: () => {
        throw new Error("USERS_FILE: not JSON");
      },
      log: (l) => lines.push(l),
    });
    const cookie = await cookieFor(auth, store);
    await auth.refresh();
    expect((await auth.authenticate({ cookie }))?.name).toBe("alice");
    expect(lines.join("\n")).toContain("could not re-read the user table: USERS_FILE: not JSON");
  });

  it("never throws on hostile headers", async () => {
    const auth = await signedIn(new MemorySessions(), { t: 0 });
    for (const headers of [
      { cookie: "theme=100%" },
      { cookie: `${SESSION_COOKIE}=%` },
      { cookie: `${SESSION_COOKIE}=${"A".repeat(32)}.${"%".repeat(10)}` },
      { authorization: "Bearer" },
      { authorization: "Bearer \u00ff" },
    ]) {
      expect(auth.fromHeaders(headers)).toBeNull();
      expect(await auth.authenticate(headers)).toBeNull();
    }
  });
});
