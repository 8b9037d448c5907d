/**
 * The quick start's demo of every backend, run as the quick start runs it: it writes the agent's REDLOCK_NODES and
 * ZK_CONNECT once its servers answer, and when the quick start's shell is gone it stops every server it started.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "../harness/ports";
import { startRedis, type RedisServer } from "../harness/redis";

const dir = mkdtempSync(path.join(tmpdir(), "lockscope-demo-test-"));
const procs: ChildProcess[] = [];
let redis: RedisServer | undefined;

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Whether something accepts connections on the loopback port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });
}

describe("the demo of every backend", () => {
  it("starts a Redlock group (and a ZooKeeper when installed) for the agent, and stops all of it with the quick start", async () => {
    redis = await startRedis();
    const shell = spawn("sleep", ["600"], { stdio: "ignore" }); // stands in for the quick start's shell
    procs.push(shell);
    const envFile = path.join(dir, "backends.env");
    const demo = spawn(
      path.join("node_modules", ".bin", "tsx"),
      [path.join("scripts", "demo", "every-backend.ts"), envFile],
      { env: { ...process.env, REDIS_URLS: redis.url, LOCKSCOPE_STOP_WITH_PID: String(shell.pid) }, stdio: "ignore" },
    );
    procs.push(demo);
    await waitFor("the demo's environment file", () => existsSync(envFile) && readFileSync(envFile, "utf8") !== "", {
      timeoutMs: 60_000,
    });
    const env = readFileSync(envFile, "utf8");
    const nodes = /^export REDLOCK_NODES=(.+)$/m.exec(env)![1]!.split(",");
    expect(nodes).toHaveLength(5);
    const ports = nodes.map((u) => Number(new URL(u).port));
    const zk = /^export ZK_CONNECT=127\.0\.0\.1:(\d+)$/m.exec(env);
    if (existsSync("/usr/share/java/zookeeper.jar")) expect(zk).not.toBeNull();
    if (zk) ports.push(Number(zk[1]));
    for (const p of ports) expect(await listening(p)).toBe(true);

    shell.kill("SIGTERM"); // the quick start ends, however it ends
    await waitFor("the demo to stop", () => demo.exitCode !== null || demo.signalCode !== null, { timeoutMs: 15_000 });
    await waitFor(
      "every demo server to be gone",
      async () => {
        for (const p of ports) if (await listening(p)) return false;
        return true;
      },
      { timeoutMs: 15_000 },
    );
  });
});
