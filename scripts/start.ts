/**
 * `npm start`: the dashboard and one agent on this machine, as two child processes so that an agent fault never
 * takes the dashboard down. A missing AGENT_TOKEN is generated for this run (both children get the same one).
 * Built (dist/start.mjs, `npm start`) it runs the compiled dist/dashboard.mjs and dist/agent.mjs with plain node;
 * from source (`npm run dev`) it runs the TypeScript through tsx.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { AGENT_NODE_FLAGS } from "../agent/node-flags";

// Both scripts/start.ts and dist/start.mjs sit one level below the checkout's root.
const root = path.resolve(import.meta.dirname, "..");
const compiled = path.basename(import.meta.dirname) === "dist";
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

function run(name: "dashboard" | "agent", script: string): ChildProcess {
  const flags = name === "agent" ? AGENT_NODE_FLAGS : [];
  const [command, args] = compiled
    ? [process.execPath, [...flags, path.join(root, "dist", `${name}.mjs`)]]
    : [tsx, [script]];
  const child = spawn(command, args, { cwd: root, env, stdio: "inherit" });
  child.on("exit", (code, signal) => {
    if (stopping) return;
    process.stderr.write(`lockscope: ${name} exited (${signal ?? code}); stopping\n`);
    stop(code ?? 1);
  });
  children.push(child);
  return child;
}

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** Stops both children and exits once they are gone, so nothing outlives `npm start` (SIGKILL after 5 s). */
function stop(code: number): void {
  if (stopping) return;
  stopping = true;
  const done = () => {
    if (!children.some(running)) process.exit(code);
  };
  for (const c of children) {
    c.once("exit", done);
    if (running(c)) c.kill("SIGTERM");
  }
  done();
  setTimeout(() => {
    for (const c of children) if (running(c)) c.kill("SIGKILL");
    process.exit(code);
  }, 5000).unref();
}

process.on("SIGINT", () => stop(0));
process.on("SIGTERM", () => stop(0));

run("dashboard", "lib/server/main.ts");
// The agent retries until the dashboard listens, so no ordering is needed here.
run("agent", "agent/main.ts");
