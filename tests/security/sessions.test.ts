import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { io } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UI_NAMESPACE } from "../../lib/contract/socket";
import { hashPassword } from "../../lib/server/auth/passwords";
import { createTestDatabase, type TestDatabase } from "../harness/postgres-server";
import { startDashboard, TEST_PASSWORD, waitFor, type Dashboard } from "../harness/stack";
import { uiHandshake } from "../harness/ui-handshake";

// Issue 10 items 6 and 7: sessions are server-side records (logout, a removed user and a changed role take effect
// at once, on every dashboard sharing the database), and /api/auth/* refuse cross-site and non-JSON requests.
let dir: string;
let usersFile: string;
let db: TestDatabase;
let a: Dashboard;
let b: Dashboard;
let hash: string;

function writeUsers(users: Array<{ name: string; role: string }>): void {
  writeFileSync(usersFile, JSON.stringify(users.map((u) => ({ ...u, passwordHash: hash }))));
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "lockscope-sessions-"));
  usersFile = path.join(dir, "users.json");
  hash = await hashPassword(TEST_PASSWORD);
  writeUsers([
    { name: "carol", role: "operator" },
    { name: "dave", role: "operator" },
    { name: "erin", role: "operator" },
  ]);
  // Two dashboards on one PostgreSQL database with one session key, as behind a load balancer.
  db = await createTestDatabase();
  const env = { USERS_FILE: usersFile, DATABASE_URL: db.url, SESSION_SECRET: "sessions-test-secret-0123456789-abcdef" };
  a = await startDashboard({ env });
  b = await startDashboard({ env });
});

afterAll(async () => {
  for (const d of [a, b]) {
    await d?.stop();
    d?.cleanup();
  }
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function signIn(d: Dashboard, name: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${d.url}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: d.url },
    body: JSON.stringify({ name, password: TEST_PASSWORD }),
  });
  expect(res.status).toBe(200);
  const { csrfToken } = (await res.json()) as { csrfToken: string };
  return { cookie: res.headers.get("set-cookie")!.split(";")[0]!, csrf: csrfToken };
}

function asBrowser(d: Dashboard, p: string, cookie: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("cookie", cookie);
  return fetch(`${d.url}${p}`, { ...init, headers });
}

function logout(d: Dashboard, s: { cookie: string; csrf: string }, headers: Record<string, string> = {}) {
  return asBrowser(d, "/api/auth/logout", s.cookie, {
    method: "POST",
    headers: { "content-type": "application/json", origin: d.url, "x-csrf-token": s.csrf, ...headers },
    body: "{}",
  });
}

describe("server-side sessions", () => {
  it("a session signed in on one dashboard opens the live socket on the other, and not after logout", async () => {
    const s = await signIn(a, "carol");
    // B has had no HTTP request with this cookie: the handshake relies on B's once-a-second read of new sessions.
    await waitFor("B to accept the socket", async () => (await uiHandshake(b.url, s.cookie)) === "connected", {
      timeoutMs: 3000,
    });
    expect(await logout(a, s).then((r) => r.status)).toBe(200);
    expect(await uiHandshake(a.url, s.cookie)).toMatch(/unauthorised/);
    await waitFor("B to refuse the socket", async () => /unauthorised/.test(await uiHandshake(b.url, s.cookie)), {
      timeoutMs: 3000,
    });
  });

  it("a live socket already open on either dashboard is closed within seconds of the logout", async () => {
    const s = await signIn(a, "carol");
    await waitFor("B to accept the socket", async () => (await uiHandshake(b.url, s.cookie)) === "connected", {
      timeoutMs: 3000,
    });
    const open = (d: Dashboard) =>
      new Promise<{ closed: Promise<string> }>((resolve, reject) => {
        const socket = io(`${d.url}${UI_NAMESPACE}`, {
          extraHeaders: { cookie: s.cookie },
          transports: ["websocket"],
          reconnection: false,
        });
        const closed = new Promise<string>((r) => socket.on("disconnect", (reason) => r(reason)));
        socket.on("connect", () => resolve({ closed }));
        socket.on("connect_error", reject);
      });
    const [onA, onB] = [await open(a), await open(b)];
    expect((await logout(a, s)).status).toBe(200);
    const within = (p: Promise<string>) =>
      Promise.race([p, new Promise<string>((r) => setTimeout(() => r("still open after 5 s"), 5000))]);
    // Closed by the server (socket.io reports "io server disconnect"), not by the test.
    expect(await within(onA.closed)).toBe("io server disconnect");
    expect(await within(onB.closed)).toBe("io server disconnect");
  });

  it("after logout the old cookie is refused (401), on this dashboard at once and on the other within 2 s", async () => {
    const s = await signIn(a, "carol");
    expect((await asBrowser(a, "/api/locks", s.cookie)).status).toBe(200);
    // Signed in on A, used on B: the record is in the shared database.
    expect((await asBrowser(b, "/api/locks", s.cookie)).status).toBe(200);

    expect((await logout(a, s)).status).toBe(200);
    expect((await asBrowser(a, "/api/locks", s.cookie)).status).toBe(401);
    expect((await asBrowser(a, "/api/session", s.cookie)).status).toBe(401);
    const loggedOutAt = Date.now();
    await waitFor(
      "the logout to reach dashboard B",
      async () => (await asBrowser(b, "/api/locks", s.cookie)).status === 401,
      {
        timeoutMs: 2000,
      },
    );
    expect(Date.now() - loggedOutAt).toBeLessThan(2000);
  });

  it("a user whose role changed gets the new role, and a removed user is refused (401)", async () => {
    const s = await signIn(a, "dave");
    expect((await asBrowser(a, "/api/audit", s.cookie)).status).toBe(200);
    writeUsers([
      { name: "carol", role: "operator" },
      { name: "dave", role: "viewer" },
      { name: "erin", role: "operator" },
    ]);
    await waitFor("dave to be a viewer on A", async () => (await asBrowser(a, "/api/audit", s.cookie)).status === 403);
    await waitFor("dave to be a viewer on B", async () => (await asBrowser(b, "/api/audit", s.cookie)).status === 403);
    expect(await (await asBrowser(b, "/api/session", s.cookie)).json()).toMatchObject({ name: "dave", role: "viewer" });
    expect((await asBrowser(a, "/api/locks", s.cookie)).status).toBe(200);

    writeUsers([
      { name: "carol", role: "operator" },
      { name: "erin", role: "operator" },
    ]);
    await waitFor("dave to be refused on A", async () => (await asBrowser(a, "/api/locks", s.cookie)).status === 401);
    await waitFor("dave to be refused on B", async () => (await asBrowser(b, "/api/locks", s.cookie)).status === 401);
  });

  it("a cookie for a user removed from USERS is refused after a restart with the same session key", async () => {
    const own = mkdtempSync(path.join(tmpdir(), "lockscope-sessions-restart-"));
    // Explicit USERS with one hash: a changed password hash would end viewer1's session too (on purpose).
    let d = await startDashboard({ dir: own, env: { USERS: `operator1:operator:${hash},viewer1:viewer:${hash}` } });
    try {
      const s = await signIn(d, "operator1");
      const kept = await signIn(d, "viewer1");
      expect((await asBrowser(d, "/api/locks", s.cookie)).status).toBe(200);
      await d.stop();
      // Same database and session key; operator1 is gone from USERS.
      d = await startDashboard({ dir: own, env: { USERS: `viewer1:viewer:${hash}` } });
      // A tab of viewer1 reconnecting its live socket after the restart, before any HTTP request: still signed in.
      expect(await uiHandshake(d.url, kept.cookie)).toBe("connected");
      expect(await uiHandshake(d.url, s.cookie)).toMatch(/unauthorised/);
      expect((await asBrowser(d, "/api/locks", s.cookie)).status).toBe(401);
      expect((await asBrowser(d, "/api/session", s.cookie)).status).toBe(401);
      expect((await asBrowser(d, "/api/locks", kept.cookie)).status).toBe(200);
    } finally {
      await d.stop();
      rmSync(own, { recursive: true, force: true });
    }
  });
});

describe("cross-site sign-in and sign-out (login and logout CSRF)", () => {
  const EVIL = "https://evil.example";

  it("refuses a cross-site login in any form a page on another site can send", async () => {
    const body = JSON.stringify({ name: "erin", password: TEST_PASSWORD });
    for (const [headers, refusals] of [
      [{ "content-type": "text/plain", origin: EVIL }, [403, 415]],
      [{ "content-type": "application/x-www-form-urlencoded", origin: EVIL }, [403, 415]],
      [{ "content-type": "application/json", origin: EVIL }, [403]],
      [{ "content-type": "text/plain;charset=UTF-8", origin: "null" }, [403, 415]],
      [{ "content-type": "application/json", origin: "null" }, [403]],
      [{ "content-type": "application/json", "sec-fetch-site": "cross-site" }, [403]],
      [{ "content-type": "text/plain" }, [415]],
      [{ "content-type": "multipart/form-data; boundary=x" }, [415]],
    ] as const) {
      const res = await fetch(`${a.url}/api/auth/login`, { method: "POST", headers, body });
      expect(refusals, JSON.stringify(headers)).toContain(res.status);
      expect(res.headers.get("set-cookie"), JSON.stringify(headers)).toBeNull();
    }
    // The page's own request still works.
    await signIn(a, "erin");
  });

  it("refuses a cross-site logout: the session stays valid", async () => {
    const s = await signIn(a, "erin");
    const attempts: Array<Record<string, string>> = [
      { "content-type": "text/plain", origin: EVIL },
      { "content-type": "application/x-www-form-urlencoded", origin: EVIL },
      { "content-type": "text/plain" },
      { "content-type": "application/json", "x-csrf-token": "" },
      { "content-type": "application/json", "x-csrf-token": "wrong" },
    ];
    for (const headers of attempts) {
      const res = await logout(a, s, headers);
      expect(res.status, JSON.stringify(headers)).toBeGreaterThanOrEqual(403);
      expect(res.status, JSON.stringify(headers)).toBeLessThanOrEqual(415);
      expect(res.headers.get("set-cookie"), JSON.stringify(headers)).toBeNull();
      expect((await asBrowser(a, "/api/locks", s.cookie)).status, JSON.stringify(headers)).toBe(200);
    }
    expect((await logout(a, s)).status).toBe(200);
    expect((await asBrowser(a, "/api/locks", s.cookie)).status).toBe(401);
  });
});

describe("sign-in attempts", () => {
  // Runs last on dashboard B: after it, B refuses sign-ins from this address for a minute.
  it("counts only failed sign-ins: 30 good ones pass, and after 20 wrong passwords even the right one waits", async () => {
    for (let i = 0; i < 30; i++) await signIn(b, "carol");
    const attempt = (password: string) =>
      fetch(`${b.url}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: b.url },
        body: JSON.stringify({ name: "carol", password }),
      });
    for (let i = 0; i < 20; i++) expect((await attempt(`wrong-${i}`)).status).toBe(401);
    const refused = await attempt(TEST_PASSWORD);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ error: expect.stringMatching(/too many failed sign-in attempts/) });
    expect(refused.headers.get("set-cookie")).toBeNull();
  });
});
