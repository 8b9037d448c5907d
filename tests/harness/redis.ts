import { spawn, type ChildProcess } from "node:child_process";
import { Redis } from "ioredis";
import { freePort, waitFor } from "./ports";

export interface RedisServer {
  port: number;
  url: string;
  process: ChildProcess;
  /** A client for the test itself (not the agent's). */
  client(): Redis;
  /** SIGSTOP / SIGCONT: a frozen node answers nothing, like a stuck host. */
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

/**
 * Starts a real redis-server on a free loopback port, with nothing written to disk; stops it with stop().
 * `extraArgs` are passed through (for example ["--replicaof", "127.0.0.1", "6390"]); `fixedPort` restarts a
 * server on the port a stopped one had.
 */
export async function startRedis(extraArgs: string[] = [], fixedPort?: number): Promise<RedisServer> {
  const port = fixedPort ?? (await freePort());
  const proc = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--enable-debug-command",
      "local",
      ...extraArgs,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  proc.stdout?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  proc.stderr?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const clients: Redis[] = [];
  const probe = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on("error", () => undefined); // refused until the server listens: that is what the loop waits for
  try {
    await waitFor(`redis-server on port ${port}`, async () => {
      if (proc.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
      if (probe.status !== "ready") await probe.connect().catch(() => undefined);
      return probe.status === "ready" && (await probe.ping()) === "PONG";
    });
  } finally {
    probe.disconnect();
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    process: proc,
    client() {
      const c = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
      clients.push(c);
      return c;
    },
    freeze: () => void proc.kill("SIGSTOP"),
    thaw: () => void proc.kill("SIGCONT"),
    async stop() {
      for (const c of clients) c.disconnect();
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGCONT");
      const exited = new Promise<void>((r) => proc.once("exit", () => r()));
      proc.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (proc.exitCode === null) proc.kill("SIGKILL");
    },
  };
}
