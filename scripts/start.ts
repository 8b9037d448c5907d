/**
 * `npm start`: the dashboard and one agent on this machine, as two child processes so that an agent fault never
 * takes the dashboard down. A missing AGENT_TOKEN is generated for this run (both children get the same one).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const env: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };
if (!env.AGENT_TOKEN) env.AGENT_TOKEN = randomBytes(24).toString("base64url");
const port = env.PORT ?? "3000";
env.DASHBOARD_URL ??= `http://127.0.0.1:${port}`;

if ((env.LOCKSCOPE_UI ?? "on") === "on" && !existsSync(path.join(root, ".next", "BUILD_ID"))) {
  process.stderr.write(
    "lockscope: the dashboard pages are not built yet; run `npm run build` first (the quick start does it)\n",
  );
  process.exit(2);
}

const tsx = path.join(root, "node_modules", ".bin", "tsx");
const children: ChildProcess[] = [];
let stopping = false;

function run(name: string, script: string): ChildProcess {
  const child = spawn(tsx, [script], { cwd: root, env, stdio: "inherit" });
  child.on("exit", (code, signal) => {
    if (stopping) return;
    process.stderr.write(`lockscope: ${name} exited (${signal ?? code}); stopping\n`);
    stop(code ?? 1);
  });
  children.push(child);
  return child;
}

function stop(code: number): void {
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  setTimeout(() => process.exit(code), 500).unref();
}

process.on("SIGINT", () => stop(0));
process.on("SIGTERM", () => stop(0));

run("dashboard", "lib/server/main.ts");
// The agent retries until the dashboard listens, so no ordering is needed here.
run("agent", "agent/main.ts");
