import { spawn } from "node:child_process";
import path from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, type Terminal } from "../../cli/main";
import type { AuditEntryView, ReleaseResult } from "../../lib/contract/release";
import { freePort } from "../harness/ports";
import type { RedisServer } from "../harness/redis";
import { startRedisStack, stopStack, TOKENS, waitFor, type Dashboard, type Proc } from "../harness/stack";

const root = path.resolve(import.meta.dirname, "..", "..");
/** The package's bin, as `npx lockscope` runs it. */
const bin = path.join(root, "cli", "bin.mjs");

let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;
let client: Redis;

beforeAll(async () => {
  ({ redis, dashboard, agent } = await startRedisStack());
  client = redis.client();
});

afterAll(() => stopStack({ redis, dashboard, agent }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a child process, as an operator or a script would; stdin is not a terminal. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: root,
      env: { ...process.env, LOCKSCOPE_URL: dashboard.url, LOCKSCOPE_TOKEN: TOKENS.operator, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function idOf(resource: string): Promise<string> {
  let id = "";
  await waitFor(
    `${resource} listed by lockscope locks`,
    async () => {
      const r = await cli(["locks", "--json", "--query", resource]);
      const lock = (JSON.parse(r.stdout) as { locks: Array<{ id: string; resource: string }> }).locks.find(
        (l) => l.resource === resource,
      );
      id = lock?.id ?? "";
      return id !== "";
      // Each try starts a CLI process (and the first lock waits for the agent's first poll): slow on a loaded machine.
    },
    { timeoutMs: 30_000 },
  );
  return id;
}

describe("the lockscope command line against a real dashboard", () => {
  it("lists locks as a table and as one JSON document, with filters", async () => {
    await client.set("cli:lock:orders", "worker-7", "PX", 60_000);
    await client.set("cli:lock:legacy", "1");
    await idOf("cli:lock:legacy");
    await idOf("cli:lock:orders");

    const table = await cli(["locks"]);
    expect(table.code).toBe(0);
    expect(table.stderr).toBe("");
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^RESOURCE\s+BACKEND\s+OWNER\s+TTL/);
    expect(lines.find((l) => l.startsWith("cli:lock:orders"))).toMatch(/redis\s+worker-7\s+\d+ s/);
    expect(lines.find((l) => l.startsWith("cli:lock:legacy"))).toMatch(/never.*no-ttl/);

    const json = await cli(["locks", "--json", "--hazard", "no-ttl"]);
    expect(json.code).toBe(0);
    const body = JSON.parse(json.stdout) as { total: number; locks: Array<{ resource: string }> };
    expect(body.locks.map((l) => l.resource)).toContain("cli:lock:legacy");
    expect(body.locks.map((l) => l.resource)).not.toContain("cli:lock:orders");
    expect(body.total).toBe(body.locks.length);
  });

  it("shows one lock with its events, and exits 1 for a lock it does not know", async () => {
    const id = await idOf("cli:lock:orders");
    const detail = await cli(["lock", id]);
    expect(detail.code).toBe(0);
    expect(detail.stdout).toContain("resource      cli:lock:orders");
    expect(detail.stdout).toContain("owner         worker-7");
    expect(detail.stdout).toMatch(/recent events \(\d+\)\nAT\s+TYPE[\s\S]*acquired\s+cli:lock:orders/);
    const json = JSON.parse((await cli(["lock", id, "--json"])).stdout) as { lock: { id: string } };
    expect(json.lock.id).toBe(id);

    const missing = await cli(["lock", "no-such-lock-id"]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toBe("lockscope: no lock no-such-lock-id is held or in history\n");
  });

  it("releases with a dry run first, then for real with --yes; refuses a wrong owner", async () => {
    await client.set("cli:lock:stuck", "crashed-worker-42");
    const id = await idOf("cli:lock:stuck");
    const reason = ["--reason", "worker-42 crashed; report stuck"];

    const dry = await cli(["release", id, "--owner", "crashed-worker-42", ...reason, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^dry-run: .*nothing deleted/);
    expect(dry.stdout).toContain("DEL cli:lock:stuck");
    expect(await client.exists("cli:lock:stuck")).toBe(1);

    // Not on a terminal, a real release needs --yes: usage, nothing deleted.
    const unconfirmed = await cli(["release", id, "--owner", "crashed-worker-42", ...reason]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toMatch(/^lockscope: release without --dry-run asks for a typed confirmation.*\n$/);
    expect(await client.exists("cli:lock:stuck")).toBe(1);

    const wrong = await cli(["release", id, "--owner", "someone-else", ...reason, "--yes"]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(
      "lockscope: refused-owner-changed: the owner is now crashed-worker-42: nothing was deleted\n",
    );
    expect(await client.exists("cli:lock:stuck")).toBe(1);

    const viewer = await cli(["release", id, "--owner", "crashed-worker-42", ...reason, "--yes"], {
      LOCKSCOPE_TOKEN: TOKENS.viewer,
    });
    expect(viewer.code).toBe(1);
    expect(viewer.stderr.split("\n")).toHaveLength(2);
    expect(await client.exists("cli:lock:stuck")).toBe(1);

    const real = await cli(["release", id, "--owner", "crashed-worker-42", ...reason, "--yes", "--json"]);
    expect(real.code).toBe(0);
    expect((JSON.parse(real.stdout) as ReleaseResult).outcome).toBe("released");
    expect(await client.exists("cli:lock:stuck")).toBe(0);

    const again = await cli(["release", id, "--owner", "crashed-worker-42", ...reason, "--yes"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^lockscope: nothing released/);

    const res = await dashboard.request("/api/audit", {}, "operator");
    const entries = ((await res.json()) as { entries: AuditEntryView[] }).entries.filter((e) => e.lockId === id);
    expect(entries.map((e) => e.outcome)).toEqual(
      expect.arrayContaining(["dry-run", "refused-owner-changed", "released"]),
    );
  });

  it("on a terminal, shows the dry run's plan and releases only after the resource name is typed", async () => {
    await client.set("cli:lock:typed", "worker-9");
    const id = await idOf("cli:lock:typed");
    const session = (typed: string) => {
      const said: string[] = [];
      const asked: string[] = [];
      const t: Terminal = {
        out: (s) => void said.push(s),
        err: (s) => void said.push(s),
        interactive: true,
        ask: async (q) => {
          asked.push(q);
          return typed;
        },
      };
      return { t, said, asked };
    };
    const env = { LOCKSCOPE_URL: dashboard.url, LOCKSCOPE_TOKEN: TOKENS.operator };
    const args = ["release", id, "--owner", "worker-9", "--reason", "stuck since the deploy"];

    const wrong = session("cli:lock:other");
    expect(await run(args, env, wrong.t)).toBe(1);
    expect(wrong.asked).toEqual(["type the resource name to release it (cli:lock:typed): "]);
    expect(wrong.said.join("")).toContain("DEL cli:lock:typed");
    expect(wrong.said.join("")).toContain("lockscope: the name does not match: nothing released\n");
    expect(await client.exists("cli:lock:typed")).toBe(1);

    const right = session("cli:lock:typed");
    expect(await run(args, env, right.t)).toBe(0);
    expect(right.said.at(-1)).toMatch(/^released: released by test-operator/);
    expect(await client.exists("cli:lock:typed")).toBe(0);
  });

  it("lists events and alerts", async () => {
    const events = await cli(["events", "--resource", "cli:lock:stuck", "--since", "1h"]);
    expect(events.code).toBe(0);
    expect(events.stdout).toMatch(/^AT\s+TYPE\s+RESOURCE/);
    expect(events.stdout).toMatch(/released\s+cli:lock:stuck/);
    const json = JSON.parse((await cli(["events", "--json", "--limit", "1"])).stdout) as { events: unknown[] };
    expect(json.events).toHaveLength(1);

    const alerts = await cli(["alerts", "--json"]);
    expect(alerts.code).toBe(0);
    expect(JSON.parse(alerts.stdout)).toHaveProperty("open");
    expect((await cli(["alerts", "--state", "open"])).code).toBe(0);
  });

  it("draws a live table over socket.io that follows changes", async () => {
    const child = spawn(process.execPath, [bin, "watch", "--query", "cli:lock:watch"], {
      cwd: root,
      env: { ...process.env, LOCKSCOPE_URL: dashboard.url, LOCKSCOPE_TOKEN: TOKENS.viewer },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    try {
      await waitFor("the first screen", () => out.includes("lockscope watch") && out.includes("· live ·"), {
        timeoutMs: 20_000,
      });
      await client.set("cli:lock:watch-a", "holder-a", "PX", 60_000);
      await waitFor("the new lock on screen", () => /cli:lock:watch-a\s+redis\s+holder-a/.test(out), {
        timeoutMs: 15_000,
      });
      const mark = out.length;
      await client.del("cli:lock:watch-a");
      await waitFor("the lock gone from the screen", () => out.slice(mark).includes("· 0 locks ·"), {
        timeoutMs: 15_000,
      });
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  });

  it("exits 2 for usage, 3 when the dashboard cannot be reached, 1 without a token", async () => {
    const usage = await cli(["locks", "--backend", "etcd"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe(
      'lockscope: --backend must be one of redis, redlock, zookeeper, postgres, mysql (got "etcd")\n',
    );

    const closed = `http://127.0.0.1:${await freePort()}`;
    for (const args of [["locks"], ["watch"]]) {
      const down = await cli(args, { LOCKSCOPE_URL: closed });
      expect(down.code).toBe(3);
      expect(down.stdout).toBe("");
      expect(down.stderr).toMatch(new RegExp(`^lockscope: cannot reach the dashboard at ${closed}: .+\\n$`));
    }

    const anonymous = await cli(["locks"], { LOCKSCOPE_TOKEN: "" });
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toMatch(/^lockscope: .*--token or LOCKSCOPE_TOKEN\)\n$/);
  });
});
