import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AGENT_NODE_FLAGS } from "../../agent/node-flags";
import type { LocksResponse } from "../../lib/contract/api";
import { hashPassword } from "../../lib/server/auth/passwords";
import { freePort, waitFor } from "./ports";
import { startRedis, type RedisServer } from "./redis";

const root = path.resolve(import.meta.dirname, "..", "..");
const tsx = path.join(root, "node_modules", ".bin", "tsx");

export const TEST_AGENT_TOKEN = "test-agent-token-0123456789";
/** API tokens every test dashboard accepts, one per role. */
export const TOKENS = {
  viewer: "test-viewer-token-0123456789",
  operator: "test-operator-token-0123456789",
  admin: "test-admin-token-0123456789",
} as const;
/** Password of the test users viewer1, operator1 and admin1. */
export const TEST_PASSWORD = "correct horse battery";

export interface Proc {
  process: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function launch(
  script: string,
  env: Record<string, string>,
  compiled = false,
  nodeFlags: readonly string[] = [],
): Proc {
  // compiled: the esbuild bundle under plain node, as production runs it (dist/<name>.mjs, `npm run bundle`).
  // tsx passes node flags on to the node it runs (`--cpu-prof` included).
  const child = spawn(compiled ? process.execPath : tsx, [...nodeFlags, script], {
    cwd: root,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return {
    process: child,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once("exit", () => r()));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}

export interface Dashboard extends Proc {
  url: string;
  port: number;
  databaseUrl: string;
  get<T = unknown>(pathAndQuery: string): Promise<T>;
  /**
   * Every live lock matching `query` (GET /api/locks parameters), all pages followed by cursor: /api/locks answers
   * 100 by default.
   */
  allLocks(query?: string): Promise<LocksResponse>;
  /** A raw request as one of the test roles (or none: unauthenticated). */
  request(pathAndQuery: string, init?: RequestInit, role?: keyof typeof TOKENS | null): Promise<Response>;
  restart(): Promise<Dashboard>;
  cleanup(): void;
}

/** Starts the dashboard server (API-only unless ui) on a free loopback port with its own SQLite file (or env's DATABASE_URL). */
export async function startDashboard(
  opts: {
    ui?: boolean;
    port?: number;
    dir?: string;
    env?: Record<string, string>;
    /** Run the bundle `node dist/dashboard.mjs` as production does (the caller makes sure it is built and current). */
    compiled?: boolean;
    /** More node flags (`--cpu-prof`, which NODE_OPTIONS does not accept). */
    nodeFlags?: readonly string[];
  } = {},
): Promise<Dashboard> {
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), "lockscope-dash-"));
  const port = opts.port ?? (await freePort());
  // A DATABASE_URL in env (a PostgreSQL test database) replaces the SQLite file.
  const databaseUrl = opts.env?.DATABASE_URL ?? `file:${path.join(dir, "lockscope.db")}`;
  const proc = launch(
    opts.compiled ? "dist/dashboard.mjs" : "lib/server/main.ts",
    {
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      AGENT_TOKEN: TEST_AGENT_TOKEN,
      LOCKSCOPE_UI: opts.ui ? "on" : "off",
      API_TOKENS: Object.entries(TOKENS)
        .map(([role, token]) => `test-${role}:${role}:${token}`)
        .join(","),
      USERS: await testUsers(),
      ...opts.env,
    },
    opts.compiled,
    opts.nodeFlags,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    `dashboard on ${url}`,
    async () => {
      if (proc.process.exitCode !== null) throw new Error(`dashboard exited: ${proc.output()}`);
      const res = await fetch(`${url}/api/health`);
      return res.ok;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  const dash: Dashboard = {
    ...proc,
    url,
    port,
    databaseUrl,
    async get<T>(p: string) {
      const res = await fetch(`${url}${p}`, { headers: { authorization: `Bearer ${TOKENS.viewer}` } });
      if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    },
    async allLocks(query = "") {
      const first = await dash.get<LocksResponse>(`/api/locks?limit=1000${query ? `&${query}` : ""}`);
      const locks = [...first.locks];
      let cursor = first.nextCursor;
      while (cursor) {
        const page = await dash.get<LocksResponse>(
          `/api/locks?limit=1000${query ? `&${query}` : ""}&cursor=${encodeURIComponent(cursor)}`,
        );
        locks.push(...page.locks);
        cursor = page.nextCursor;
      }
      return { ...first, locks, nextCursor: null };
    },
    request(p, init = {}, role = "viewer") {
      const headers = new Headers(init.headers);
      if (role) headers.set("authorization", `Bearer ${TOKENS[role]}`);
      return fetch(`${url}${p}`, { ...init, headers });
    },
    async restart() {
      await proc.stop();
      return startDashboard({ ...opts, port, dir });
    },
    cleanup() {
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return dash;
}

/**
 * Starts an agent process streaming to `dashboardUrl`: the TypeScript source through tsx, or with `compiled` the
 * bundle `node dist/agent.mjs` as production runs it (the caller makes sure it is built and current).
 */
export function startAgent(
  dashboardUrl: string,
  env: Record<string, string>,
  /** nodeFlags: more flags for a compiled agent's node (`--cpu-prof`, which NODE_OPTIONS does not accept). */
  opts: { compiled?: boolean; nodeFlags?: readonly string[] } = {},
): Proc {
  return launch(
    opts.compiled ? "dist/agent.mjs" : "agent/main.ts",
    {
      DASHBOARD_URL: dashboardUrl,
      AGENT_TOKEN: TEST_AGENT_TOKEN,
      AGENT_ID: `test-agent-${process.pid}`,
      POLL_INTERVAL_MS: "200",
      ...env,
    },
    opts.compiled,
    [...AGENT_NODE_FLAGS, ...(opts.nodeFlags ?? [])],
  );
}

export { waitFor };

let users: Promise<string> | null = null;
/** USERS for test dashboards: one per role, all with TEST_PASSWORD (hashed once per test process). */
function testUsers(): Promise<string> {
  users ??= (async () => {
    const hash = await hashPassword(TEST_PASSWORD);
    return ["viewer", "operator", "admin"].map((role) => `${role}1:${role}:${hash}`).join(",");
  })();
  return users;
}

/** The common integration set-up: a redis-server, an API-only dashboard, and an agent watching the server. */
export async function startRedisStack(
  opts: { agentEnv?: Record<string, string>; dashboardEnv?: Record<string, string> } = {},
): Promise<{ redis: RedisServer; dashboard: Dashboard; agent: Proc }> {
  const redis = await startRedis();
  const dashboard = await startDashboard({ env: opts.dashboardEnv });
  const agent = startAgent(dashboard.url, { REDIS_URLS: redis.url, ...opts.agentEnv });
  return { redis, dashboard, agent };
}

/** Stops what startRedisStack started (any part may be missing when the set-up failed half-way). */
export async function stopStack(parts: { redis?: RedisServer; dashboard?: Dashboard; agent?: Proc }): Promise<void> {
  await parts.agent?.stop();
  await parts.dashboard?.stop();
  parts.dashboard?.cleanup();
  await parts.redis?.stop();
}
