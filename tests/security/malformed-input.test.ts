import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawRequest } from "../harness/raw-http";
import { startDashboard, TEST_PASSWORD, TOKENS, type Dashboard } from "../harness/stack";
import { uiHandshake } from "../harness/ui-handshake";

// Issue 10 item 2: no input may crash or hang the dashboard. A real API-only dashboard (LOCKSCOPE_UI=off, where one
// bad cookie used to exit the process) gets malformed cookies, headers, paths and bodies on every route; each must
// get a 4xx (or the route's documented answer), and a good request must still work afterwards.
let dash: Dashboard;

beforeAll(async () => {
  dash = await startDashboard();
});

afterAll(async () => {
  await dash?.stop();
  dash?.cleanup();
});

const ROUTES: Array<{ method: string; path: string }> = [
  { method: "GET", path: "/api/health" },
  { method: "GET", path: "/api/session" },
  { method: "POST", path: "/api/auth/login" },
  { method: "POST", path: "/api/auth/logout" },
  { method: "GET", path: "/api/locks" },
  { method: "GET", path: "/api/locks/abc" },
  { method: "GET", path: "/api/events" },
  { method: "POST", path: "/api/locks/abc/release" },
  { method: "GET", path: "/api/alerts" },
  { method: "POST", path: "/api/alerts/abc/ack" },
  { method: "GET", path: "/api/audit" },
  { method: "GET", path: "/api/history/locks/abc" },
  { method: "GET", path: "/api/history/top" },
  { method: "GET", path: "/api/metrics" },
  { method: "GET", path: "/" },
  { method: "GET", path: "/locks" },
];

const BAD_COOKIES = [
  "theme=100%",
  "a=%zz",
  "a=%c0%ae",
  "a=%E0%A4%A",
  "=%",
  "lockscope_session=%",
  "lockscope_session=%zz.%zz",
  "lockscope_session=" + "A".repeat(5000),
  ";;;=;=%;",
];

async function alive(): Promise<void> {
  expect(dash.process.exitCode).toBeNull();
  const res = await dash.request("/api/locks", {}, "viewer");
  expect(res.status).toBe(200);
}

async function signInCookie(): Promise<string> {
  const res = await fetch(`${dash.url}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: dash.url },
    body: JSON.stringify({ name: "viewer1", password: TEST_PASSWORD }),
  });
  expect(res.status).toBe(200);
  return res.headers.get("set-cookie")!.split(";")[0]!;
}

describe("malformed cookies", () => {
  it("a cookie that is not valid percent-encoding is ignored on every route, and the server stays up", async () => {
    for (const cookie of BAD_COOKIES) {
      for (const r of ROUTES) {
        const headers: Record<string, string> = { cookie };
        if (r.method === "POST") headers["content-type"] = "application/json";
        const a = await rawRequest(
          dash.port,
          { method: r.method, target: r.path, headers },
          r.method === "POST" ? "{}" : "",
        );
        expect(a.status, `${r.method} ${r.path} with Cookie: ${cookie.slice(0, 40)}`).toBeGreaterThanOrEqual(200);
        expect(a.status, `${r.method} ${r.path} with Cookie: ${cookie.slice(0, 40)}`).toBeLessThan(500);
      }
    }
    await alive();
  });

  it("ignores only the malformed cookie: a good session cookie beside it still signs the browser in", async () => {
    const session = await signInCookie();
    const a = await rawRequest(dash.port, {
      target: "/api/session",
      headers: { cookie: `theme=100%; ${session}; x=%zz` },
    });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toMatchObject({ name: "viewer1", role: "viewer", via: "session" });
  });
});

describe("malformed cookies in the socket.io handshake", () => {
  it("refuses an anonymous handshake with a malformed cookie, and accepts a session beside one", async () => {
    expect(await uiHandshake(dash.url, "theme=100%")).toMatch(/unauthorised/);
    expect(await uiHandshake(dash.url, "lockscope_session=%zz; a=%")).toMatch(/unauthorised/);
    const session = await signInCookie();
    expect(await uiHandshake(dash.url, `theme=100%; ${session}`)).toBe("connected");
    await alive();
  });
});

describe("malformed paths", () => {
  const BAD_IDS = ["%", "%zz", "%c0%ae", "%E0%A4%A", "%ff%fe", "abc%"];

  it("answers 400 for a bad % sequence in an API path segment, never 500", async () => {
    for (const id of BAD_IDS) {
      for (const [method, path] of [
        ["GET", `/api/locks/${id}`],
        ["POST", `/api/locks/${id}/release`],
        ["POST", `/api/alerts/${id}/ack`],
        ["GET", `/api/history/locks/${id}`],
      ] as const) {
        const a = await rawRequest(
          dash.port,
          {
            method,
            target: path,
            headers: { authorization: `Bearer ${TOKENS.operator}`, "content-type": "application/json" },
          },
          method === "POST" ? "{}" : "",
        );
        expect(a.status, `${method} ${path}`).toBe(400);
        expect(JSON.parse(a.body).error, `${method} ${path}`).toMatch(/percent|encoding/i);
      }
    }
    await alive();
  });

  it("answers odd request targets with a 400, and path tricks with no server error", async () => {
    for (const target of ["*", "http://[", "http://evil.example/api/locks"]) {
      const a = await rawRequest(dash.port, { target, headers: { authorization: `Bearer ${TOKENS.viewer}` } });
      expect(a.status, target).toBe(400);
    }
    for (const target of [
      "//",
      "//api/locks",
      "/api/../api/locks",
      "/api/%00",
      "/api/%2e%2e/health",
      "/" + "a".repeat(12_000),
    ]) {
      const a = await rawRequest(dash.port, { target, headers: { authorization: `Bearer ${TOKENS.viewer}` } });
      expect(a.status, target.slice(0, 40)).toBeGreaterThanOrEqual(200);
      expect(a.status, target.slice(0, 40)).toBeLessThan(500);
    }
    await alive();
  });
});

describe("malformed headers", () => {
  it("survives odd Authorization, Origin, Host and oversized headers", async () => {
    const cases: Array<Record<string, string>> = [
      { authorization: "Bearer" },
      { authorization: "Bearer    " },
      { authorization: "Basic %%%" },
      { authorization: "Bearer \u00ff\u00fe" },
      { origin: "%zz", "content-type": "application/json" },
      { origin: "http://[", "content-type": "application/json" },
      { host: "%", "content-type": "application/json" },
      { cookie: "c=" + "%".repeat(15_000) },
      { "x-csrf-token": "\u00ff".repeat(100), "content-type": "application/json" },
    ];
    for (const headers of cases) {
      for (const r of ROUTES) {
        const a = await rawRequest(
          dash.port,
          { method: r.method, target: r.path, headers },
          r.method === "POST" ? "{}" : "",
        );
        expect(a.status, `${r.method} ${r.path} ${JSON.stringify(headers).slice(0, 60)}`).toBeGreaterThanOrEqual(200);
        expect(a.status, `${r.method} ${r.path} ${JSON.stringify(headers).slice(0, 60)}`).toBeLessThan(500);
      }
    }
    await alive();
  });
});

describe("malformed bodies", () => {
  const POSTS = ROUTES.filter((r) => r.method === "POST").map((r) => r.path);
  const auth = { authorization: `Bearer ${TOKENS.operator}` };

  it("answers 400 to a body that is not JSON, on every route that reads one", async () => {
    // The alert acknowledgement takes no body and ignores one.
    for (const path of POSTS.filter((p) => !p.endsWith("/ack"))) {
      for (const body of ["{", "nul", "\u0000\u0001", '{"a":1}}', '"unterminated']) {
        const a = await rawRequest(
          dash.port,
          { method: "POST", target: path, headers: { ...auth, "content-type": "application/json" } },
          body,
        );
        expect(a.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      }
    }
    await alive();
  });

  it("answers 415 to a body that is not declared as JSON", async () => {
    for (const path of POSTS) {
      for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
        const a = await rawRequest(
          dash.port,
          { method: "POST", target: path, headers: { ...auth, "content-type": type } },
          '{"a":1}',
        );
        expect(a.status, `${path} ${type}`).toBe(415);
      }
    }
    await alive();
  });

  it("answers 413 to a body over the limit, then closes the connection (no reset before the answer)", async () => {
    for (const path of POSTS) {
      const big = JSON.stringify({ reason: "x".repeat(200_000) });
      const a = await rawRequest(
        dash.port,
        { method: "POST", target: path, headers: { ...auth, "content-type": "application/json" } },
        big,
      );
      expect(a.status, path).toBe(413);
      expect(a.headers.connection, path).toBe("close");
    }
    // Declared too large: refused from the header, before a byte of the body is read.
    const declared = await rawRequest(dash.port, {
      method: "POST",
      target: "/api/auth/login",
      headers: { "content-type": "application/json", "content-length": String(50 * 1024 * 1024) },
    });
    expect(declared.status).toBe(413);
    await alive();
  });
});
