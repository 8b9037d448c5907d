/**
 * Throwaway servers for the quick-start demo: redis-servers and a standalone ZooKeeper on free loopback ports, as
 * child processes of this one (never daemonized), so that stopping the demo, or a kill of its process group, stops
 * them too. Nothing is kept on disk beyond a temporary directory removed at the end.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar";
/** The Debian package's classpath: the jar's manifest names its dependencies (a wildcard would open every jar). */
const ZK_CLASSPATH = `/etc/zookeeper/conf:${ZOOKEEPER_JAR}`;
const JVM_OPTS = ["-Xmx128m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Sends one four-letter word (or a Redis inline PING) and reads the answer until the server closes or replies. */
function ask(port: number, text: string, until: (answer: string) => boolean, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    let out = "";
    const s = connect({ host: "127.0.0.1", port }, () => s.write(text));
    const done = () => {
      clearTimeout(timer);
      s.destroy();
      resolve(out);
    };
    const timer = setTimeout(done, timeoutMs);
    s.on("data", (d: Buffer) => {
      out += d.toString();
      if (until(out)) done();
    });
    s.on("close", done);
    s.on("error", done);
  });
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`${what} did not come up within ${Math.round(timeoutMs / 1000)} s`);
}

export interface DemoServer {
  port: number;
  process: ChildProcess;
  /** SIGSTOP / SIGCONT: a frozen node accepts connections and answers nothing, like a stuck host. */
  freeze(): void;
  thaw(): void;
}

/** Everything started, stopped in reverse order by stopAll(). */
export class DemoProcesses {
  private readonly children: ChildProcess[] = [];
  private readonly dirs: string[] = [];
  private stopped = false;

  tempDir(name: string): string {
    const d = mkdtempSync(join(tmpdir(), `lockscope-demo-${name}-`));
    this.dirs.push(d);
    return d;
  }

  private track(p: ChildProcess, port: number): DemoServer {
    this.children.push(p);
    return {
      port,
      process: p,
      freeze: () => void p.kill("SIGSTOP"),
      thaw: () => void p.kill("SIGCONT"),
    };
  }

  async redis(): Promise<DemoServer> {
    const port = await freePort();
    const dir = this.tempDir("redis");
    const p = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
      { stdio: "ignore" },
    );
    const server = this.track(p, port);
    await waitUntil(
      `redis-server on 127.0.0.1:${port}`,
      async () => {
        if (p.exitCode !== null) throw new Error(`redis-server on port ${port} exited with ${p.exitCode}`);
        return (await ask(port, "PING\r\n", (a) => a.includes("\r\n"))).startsWith("+PONG");
      },
      10_000,
    );
    return server;
  }

  /** A standalone ZooKeeper with four-letter words allowed; null when ZooKeeper is not installed. */
  async zookeeper(): Promise<DemoServer | null> {
    if (!existsSync(ZOOKEEPER_JAR)) return null;
    const port = await freePort();
    const dir = this.tempDir("zk");
    const cfg = join(dir, "zoo.cfg");
    writeFileSync(
      cfg,
      [
        "tickTime=1000",
        `dataDir=${join(dir, "data")}`,
        `clientPort=${port}`,
        "clientPortAddress=127.0.0.1",
        "admin.enableServer=false",
        "4lw.commands.whitelist=*",
        "forceSync=no",
        "",
      ].join("\n"),
    );
    const p = spawn(
      "java",
      [...JVM_OPTS, "-cp", ZK_CLASSPATH, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
      {
        stdio: "ignore",
      },
    );
    const server = this.track(p, port);
    await waitUntil(
      `ZooKeeper on 127.0.0.1:${port}`,
      async () => {
        if (p.exitCode !== null) throw new Error(`ZooKeeper exited with ${p.exitCode}`);
        return (await ask(port, "ruok", (a) => a === "imok")) === "imok";
      },
      60_000,
    );
    return server;
  }

  /** Thaws and stops every child (frozen ones too: SIGTERM is not delivered to a stopped process), removes the dirs. */
  stopAll(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const p of [...this.children].reverse()) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      p.kill("SIGCONT");
      p.kill("SIGKILL");
    }
    for (const d of this.dirs) rmSync(d, { recursive: true, force: true });
  }
}

/**
 * Stops the demo with the quick start: on SIGINT/SIGTERM, and when the process named by LOCKSCOPE_STOP_WITH_PID
 * (the quick-start shell) is gone, however it ended.
 */
export function stopWithParent(onStop: () => void): void {
  let done = false;
  const stop = () => {
    if (done) return;
    done = true;
    onStop();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  process.on("exit", () => {
    if (!done) onStop();
  });
  const parent = Number(process.env.LOCKSCOPE_STOP_WITH_PID);
  if (Number.isInteger(parent) && parent > 1) {
    setInterval(() => {
      try {
        process.kill(parent, 0);
      } catch {
        stop();
      }
    }, 500).unref();
  }
}
