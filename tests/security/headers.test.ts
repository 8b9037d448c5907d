import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Authenticator } from "../../lib/server/auth/authenticator";
import type { Session, SessionStore } from "../../lib/server/auth/session";
import type { ApiDeps } from "../../lib/server/handlers/types";
import { API_CSP, createHttpHandler } from "../../lib/server/http-handler";
import { rawRequest } from "../harness/raw-http";
import { startDashboard, TEST_PASSWORD, TOKENS, type Dashboard } from "../harness/stack";

// Issue 10 item 10: CSP on pages and API, no shared caching of pages, Secure cookies behind https, and a health
// answer that shows details only to a viewer.

describe("API headers and /api/health on a real dashboard (PUBLIC_URL https)", () => {
  let dash: Dashboard;
  beforeAll(async () => {
    dash = await startDashboard({ env: { PUBLIC_URL: "https://lockscope.example" } });
  });
  afterAll(async () => {
    await dash?.stop();
    dash?.cleanup();
  });

  it("sends a restrictive CSP and no-store on every API answer, errors included", async () => {
    for (const [p, role, status] of [
      ["/api/health", null, 200],
      ["/api/locks", "viewer", 200],
      ["/api/locks", null, 401],
      ["/api/audit", "viewer", 403],
      ["/api/nope", "viewer", 404],
      ["/api/locks/%zz", "viewer", 400],
    ] as const) {
      const res = await dash.request(p, {}, role);
      expect(res.status, p).toBe(status);
      expect(res.headers.get("content-security-policy"), p).toBe(API_CSP);
      expect(res.headers.get("cache-control"), p).toBe("no-store");
      expect(res.headers.get("x-content-type-options"), p).toBe("nosniff");
    }
  });

  it("answers liveness to anyone, and source and agent details only to a viewer", async () => {
    const open = await dash.request("/api/health", {}, null);
    expect(await open.json()).toEqual({ status: "ok", sources: [], agents: [] });
    const bad = await dash.request("/api/health", { headers: { authorization: "Bearer not-a-token-at-all" } }, null);
    expect(await bad.json()).toEqual({ status: "ok", sources: [], agents: [] });
    // A viewer gets the details: the same shape, filled from the live state (agents and sources).
    const viewer = await dash.request("/api/health", {}, "viewer");
    expect(viewer.status).toBe(200);
    expect(await viewer.json()).toMatchObject({ status: "ok", sources: expect.any(Array), agents: expect.any(Array) });
  });

  it("marks the session cookie Secure, and clears it Secure at logout", async () => {
    const login = await dash.request(
      "/api/auth/login",
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "viewer1", password: TEST_PASSWORD }),
      },
      null,
    );
    expect(login.status).toBe(200);
    const cookie = login.headers.get("set-cookie")!;
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const { csrfToken } = (await login.json()) as { csrfToken: string };
    const out = await dash.request(
      "/api/auth/logout",
      {
        method: "POST",
        headers: { "content-type": "application/json", cookie: cookie.split(";")[0]!, "x-csrf-token": csrfToken },
        body: "{}",
      },
      null,
    );
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(/Max-Age=0.*; Secure/);
  });

  it("answers 413 (not a reset) to an oversized body and 400 to a bad % in an API path", async () => {
    const big = await rawRequest(
      dash.port,
      {
        method: "POST",
        target: "/api/locks/abc/release",
        headers: { authorization: `Bearer ${TOKENS.operator}`, "content-type": "application/json" },
      },
      "x".repeat(100_000),
    );
    expect(big.status).toBe(413);
    const bad = await rawRequest(dash.port, {
      target: "/api/locks/%E0%A4%A",
      headers: { authorization: `Bearer ${TOKENS.viewer}` },
    });
    expect(bad.status).toBe(400);
  });
});

/** No sessions needed for page routing with tokens; the store port answers nothing. */
const noSessions: SessionStore = {
  createSession: async () => undefined,
  findSession: async (): Promise<Session | null> => null,
  revokeSession: async () => undefined,
  sessionsCreatedSince: async () => [],
  sessionsRevokedSince: async () => [],
  pruneSessions: async () => 0,
};

describe("page routing (a stub in place of Next.js)", () => {
  let server: Server;
  let port: number;
  const seen: Array<{ csp: string | undefined; reportOnly: string | undefined }> = [];
  const logged: string[] = [];

  beforeAll(async () => {
    const { auth } = await Authenticator.create(
      { users: [], tokens: [{ name: "v", role: "viewer", token: TOKENS.viewer }], generatedAdmin: false },
      Buffer.alloc(48, 1),
      noSessions,
    );
    // What Next.js does that matters here: reads the nonce from the request's CSP header, and marks a prerendered
    // page for shared caches. Two routes fail, one synchronously and one later.
    const pages = async (req: IncomingMessage, res: ServerResponse) => {
      const csp = req.headers["content-security-policy"] as string | undefined;
      seen.push({ csp, reportOnly: req.headers["content-security-policy-report-only"] as string | undefined });
      if (req.url === "/throws") throw new Error("page handler threw");
      if (req.url === "/rejects") {
        await new Promise((r) => setImmediate(r));
        throw new Error("page handler rejected");
      }
      const nonce = /'nonce-([^']+)'/.exec(csp ?? "")?.[1] ?? "";
      if (req.url?.startsWith("/_next/static/")) {
        res.setHeader("cache-control", "public, max-age=31536000, immutable");
        res.end("asset");
        return;
      }
      res.setHeader("cache-control", "s-maxage=31536000");
      res.writeHead(200, { "content-type": "text/html", "Cache-Control": "s-maxage=31536000, stale-while-revalidate" });
      res.end(`<script nonce="${nonce}">self.__next_f=[]</script>`);
    };
    const handler = createHttpHandler({ auth } as unknown as ApiDeps, pages, (l) => logged.push(l));
    server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const viewer = { authorization: `Bearer ${TOKENS.viewer}` };

  it("gives each page its own nonce, in the response CSP and in the request header Next.js reads", async () => {
    const a = await rawRequest(port, {
      target: "/locks",
      headers: {
        ...viewer,
        "content-security-policy": "script-src 'nonce-attacker'",
        "content-security-policy-report-only": "x",
      },
    });
    const b = await rawRequest(port, { target: "/locks", headers: viewer });
    expect(a.status).toBe(200);
    const nonceA = /script-src 'self' 'nonce-([A-Za-z0-9+/=]+)'/.exec(a.headers["content-security-policy"]!)?.[1];
    const nonceB = /script-src 'self' 'nonce-([A-Za-z0-9+/=]+)'/.exec(b.headers["content-security-policy"]!)?.[1];
    expect(nonceA).toBeTruthy();
    expect(nonceA).not.toBe(nonceB);
    expect(a.body).toContain(`nonce="${nonceA}"`);
    // The client's own CSP request headers are replaced, never trusted.
    expect(seen.at(-2)).toEqual({ csp: a.headers["content-security-policy"], reportOnly: undefined });
    for (const d of ["default-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"]) {
      expect(a.headers["content-security-policy"]).toContain(d);
    }
  });

  it("sends pages with no-store, never the s-maxage a prerendered page gets; hashed assets keep theirs", async () => {
    const page = await rawRequest(port, { target: "/", headers: viewer });
    expect(page.headers["cache-control"]).toBe("no-store");
    const login = await rawRequest(port, { target: "/login" });
    expect(login.headers["cache-control"]).toBe("no-store");
    const asset = await rawRequest(port, { target: "/_next/static/chunks/app.js" });
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
  });

  it("answers a failing page handler with a 500, sync or async, and keeps serving", async () => {
    for (const target of ["/throws", "/rejects"]) {
      const a = await rawRequest(port, { target, headers: viewer });
      expect(a.status, target).toBe(500);
    }
    expect(logged.join("\n")).toContain("page handler rejected");
    expect((await rawRequest(port, { target: "/", headers: viewer })).status).toBe(200);
  });

  it("sends a browser with a malformed cookie to the sign-in page instead of hanging", async () => {
    const a = await rawRequest(port, { target: "/locks", headers: { cookie: "theme=100%; lockscope_session=%zz" } });
    expect(a.status).toBe(302);
    expect(a.headers.location).toBe("/login?next=%2Flocks");
  });
});
