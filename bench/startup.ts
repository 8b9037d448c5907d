/**
 * Start-up time and idle memory of the dashboard and the agent, run two ways side by side in one run: from the
 * TypeScript source through tsx (how `npm start` ran before the production build) and compiled (dist/*.mjs from
 * `npm run build`) with plain node. Rounds alternate the two ways so that a change in the machine's load hits both.
 *
 * Start-up: from spawning the process to the dashboard's /api/health answering, and, for the agent, to the
 * dashboard listing it as connected with its Redis source up. Idle RSS: the sum over every process of the service
 * (tsx runs the script in a child node process, so tsx's launcher counts too), after 10 s without work.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AGENT_NODE_FLAGS } from "../agent/node-flags";
import type { HealthResponse } from "../lib/contract/api";
import type { RedisServer } from "../tests/harness/redis";
import { freePort } from "../tests/harness/ports";
import { TEST_AGENT_TOKEN } from "../tests/harness/stack";
import { currentLoad } from "./support/machine";
import { descendants, memoryKb } from "./support/processes";
import type { Row, SectionResult } from "./support/result";
import { mb, median, sleep } from "./support/stats";

const root = path.resolve(import.meta.dirname, "..");
const tsx = path.join(root, "node_modules", ".bin", "tsx");
const ROUNDS = 3;
const IDLE_MS = 10_000;
const DEADLINE_MS = 120_000;
const TOKEN = "bench-startup-token-0123456789";

type Way = "tsx" | "node";
const COMMANDS: Record<Way, Record<"dashboard" | "agent", [string, string[]]>> = {
  tsx: { dashboard: [tsx, ["lib/server/main.ts"]], agent: [tsx, ["agent/main.ts"]] },
  node: {
    dashboard: [process.execPath, ["dist/dashboard.mjs"]],
    agent: [process.execPath, [...AGENT_NODE_FLAGS, "dist/agent.mjs"]],
  },
};

interface Sample {
  way: Way;
  dashboardMs: number;
  agentMs: number;
  dashboardRssKb: number;
  agentRssKb: number;
  dashboardProcesses: number;
  agentProcesses: number;
}

/** Resident set of a process and all its descendants, and how many processes that is. */
function treeRss(pid: number): { kb: number; processes: number } {
  const pids = [pid, ...descendants(pid)];
  let kb = 0;
  let processes = 0;
  for (const p of pids) {
    const rss = memoryKb(p).rssKb;
    if (rss === null) continue;
    kb += rss;
    processes++;
  }
  return { kb, processes };
}

async function until(what: string, check: () => Promise<boolean>, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what}: the process exited (${child.exitCode})`);
    try {
      if (await check()) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${DEADLINE_MS / 1000} s`);
    await sleep(20);
  }
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

async function once(way: Way, redis: RedisServer, ui: boolean, log: (line: string) => void): Promise<Sample> {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-bench-startup-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const agentId = `bench-startup-${way}-${process.pid}`;
  const env = {
    ...process.env,
    NEXT_TELEMETRY_DISABLED: "1",
    PORT: String(port),
    DATABASE_URL: `file:${path.join(dir, "lockscope.db")}`,
    AGENT_TOKEN: TEST_AGENT_TOKEN,
    API_TOKENS: `bench:viewer:${TOKEN}`,
    LOCKSCOPE_UI: ui ? "on" : "off",
    DASHBOARD_URL: url,
    AGENT_ID: agentId,
    REDIS_URLS: redis.url,
  };
  const started: ChildProcess[] = [];
  const launch = (service: "dashboard" | "agent") => {
    const [cmd, args] = COMMANDS[way][service];
    const child = spawn(cmd, args, { cwd: root, env, stdio: "ignore" });
    started.push(child);
    return child;
  };
  // /api/health names agents and sources only to a viewer.
  const health = async () =>
    (
      await fetch(`${url}/api/health`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json() as Promise<HealthResponse>;
  try {
    let t = performance.now();
    const dashboard = launch("dashboard");
    await until(`${way} dashboard`, async () => (await fetch(`${url}/api/health`)).ok, dashboard);
    const dashboardMs = performance.now() - t;
    t = performance.now();
    const agent = launch("agent");
    await until(
      `${way} agent`,
      async () => {
        const h = await health();
        return h.agents.some((a) => a.id === agentId && a.connected) && h.sources.some((s) => s.up);
      },
      agent,
    );
    const agentMs = performance.now() - t;
    await sleep(IDLE_MS);
    const d = treeRss(dashboard.pid!);
    const a = treeRss(agent.pid!);
    log(
      `${way}: dashboard ${dashboardMs.toFixed(0)} ms, ${mb(d.kb)} in ${d.processes} processes; ` +
        `agent ${agentMs.toFixed(0)} ms, ${mb(a.kb)} in ${a.processes} processes`,
    );
    return {
      way,
      dashboardMs,
      agentMs,
      dashboardRssKb: d.kb,
      agentRssKb: a.kb,
      dashboardProcesses: d.processes,
      agentProcesses: a.processes,
    };
  } finally {
    for (const c of started.reverse()) await stop(c);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function measureStartup(redis: RedisServer, log: (line: string) => void): Promise<SectionResult> {
  const base = { id: "startup", title: "Start-up and idle memory" };
  if (!existsSync(path.join(root, "dist", "dashboard.mjs")) || !existsSync(path.join(root, "dist", "agent.mjs"))) {
    return {
      ...base,
      status: "not-measured",
      rows: [],
      notes: ["dist/ is not built: run npm run build first"],
      details: {},
    };
  }
  // With the pages built the dashboard starts as in production (Next's request handler prepared); else API only.
  const ui = existsSync(path.join(root, ".next", "BUILD_ID"));
  const loadStart = currentLoad();
  const samples: Sample[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const way of r % 2 === 0 ? (["tsx", "node"] as const) : (["node", "tsx"] as const)) {
      samples.push(await once(way, redis, ui, log));
    }
  }
  const loadEnd = currentLoad();
  const of = (way: Way, f: (s: Sample) => number) => median(samples.filter((s) => s.way === way).map(f));
  const procs = (way: Way, f: (s: Sample) => number) => Math.max(...samples.filter((s) => s.way === way).map(f));
  const row = (measure: string, f: (s: Sample) => number, fmt: (v: number) => string): Row => ({
    measure,
    result: `tsx ${fmt(of("tsx", f))} → node ${fmt(of("node", f))}`,
  });
  const msText = (v: number) => `${(v / 1000).toFixed(2)} s`;
  return {
    ...base,
    status: "measured",
    rows: [
      row("dashboard start-up (spawn → /api/health answers)", (s) => s.dashboardMs, msText),
      row("agent start-up (spawn → connected, Redis source up)", (s) => s.agentMs, msText),
      {
        measure: "dashboard idle RSS (all its processes)",
        result: `tsx ${mb(of("tsx", (s) => s.dashboardRssKb))} in ${procs("tsx", (s) => s.dashboardProcesses)} → node ${mb(of("node", (s) => s.dashboardRssKb))} in ${procs("node", (s) => s.dashboardProcesses)}`,
      },
      {
        measure: "agent idle RSS (all its processes)",
        result: `tsx ${mb(of("tsx", (s) => s.agentRssKb))} in ${procs("tsx", (s) => s.agentProcesses)} → node ${mb(of("node", (s) => s.agentRssKb))} in ${procs("node", (s) => s.agentProcesses)}`,
      },
    ],
    notes: [
      `medians of ${ROUNDS} alternating rounds per way; pages ${ui ? "built (UI on)" : "not built (LOCKSCOPE_UI=off)"}; ` +
        `load average ${loadStart.toFixed(2)} at the start, ${loadEnd.toFixed(2)} at the end`,
    ],
    details: { samples, ui, loadStart, loadEnd },
  };
}
