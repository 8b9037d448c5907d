import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import zookeeper from "node-zookeeper-client";
import { freePort, waitFor } from "./ports";

/**
 * The Debian package's own classpath: zookeeper.jar's manifest names its dependencies. `/usr/share/java/*` works too
 * but makes the JVM open every jar on the machine (500 here): about 10 s to start instead of under one.
 */
const CLASSPATH = process.env.ZK_CLASSPATH ?? "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar";
const JVM_OPTS = ["-Xmx256m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"];

export interface ZookeeperOptions {
  /**
   * "all": `4lw.commands.whitelist=*`. "none": no whitelist line, ZooKeeper's default, where only `srvr` answers
   * and wchc/wchp/cons/ruok are refused, as on a server nobody configured for them.
   */
  fourLetterWords?: "all" | "none";
}

export interface ZookeeperServer {
  port: number;
  /** `127.0.0.1:<port>` */
  connect: string;
  dataDir: string;
  fourLetterWords: "all" | "none";
  /** A connected client for the test itself (a contender), closed by stop(). */
  client(opts?: { sessionTimeoutMs?: number; connect?: string }): Promise<zookeeper.Client>;
  fourLetter(cmd: string): Promise<string>;
  /** SIGKILL the JVM, keeping its data directory (for restart()). */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same data: sessions and nodes survive. */
  restart(): Promise<void>;
  /** Kills the JVM and removes its data directory. */
  stop(): Promise<void>;
}

/** Sends a four-letter word and reads the answer until the server closes the connection. */
export function fourLetter(port: number, cmd: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port }, () => s.write(cmd));
    let out = "";
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`${cmd}: timeout`));
    }, timeoutMs);
    s.on("data", (d: Buffer) => (out += d.toString()));
    s.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** A node-zookeeper-client session, resolved once connected. */
export function connectClient(
  connectString: string,
  sessionTimeoutMs = 6000,
  extra: zookeeper.ClientOptions & { sessionId?: Buffer; sessionPassword?: Buffer } = {},
): Promise<zookeeper.Client> {
  return new Promise((resolve, reject) => {
    const c = zookeeper.createClient(connectString, { sessionTimeout: sessionTimeoutMs, spinDelay: 200, ...extra });
    const timer = setTimeout(() => {
      c.close();
      reject(new Error(`no ZooKeeper session at ${connectString} within 10 s`));
    }, 10_000);
    c.once("connected", () => {
      clearTimeout(timer);
      resolve(c);
    });
    c.connect();
  });
}

export async function startZookeeper(opts: ZookeeperOptions = {}): Promise<ZookeeperServer> {
  if (!process.env.ZK_CLASSPATH && !existsSync("/usr/share/java/zookeeper.jar")) {
    throw new Error("ZooKeeper is not installed: apt-get install -y zookeeper (or set ZK_CLASSPATH)");
  }
  const mode = opts.fourLetterWords ?? "all";
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), "lockscope-zk-"));
  const cfg = join(dataDir, "zoo.cfg");
  await writeFile(
    cfg,
    [
      "tickTime=1000",
      `dataDir=${join(dataDir, "data")}`,
      `clientPort=${port}`,
      "clientPortAddress=127.0.0.1",
      "admin.enableServer=false",
      "minSessionTimeout=2000",
      "maxSessionTimeout=60000",
      // Tests create thousands of nodes; the page cache survives a SIGKILL of the JVM, which is all restart() needs.
      "forceSync=no",
      ...(mode === "all" ? ["4lw.commands.whitelist=*"] : []),
      "",
    ].join("\n"),
  );
  const clients: zookeeper.Client[] = [];
  let proc: ChildProcess;
  let output = "";

  const launch = async () => {
    output = "";
    proc = spawn("java", [...JVM_OPTS, "-cp", CLASSPATH, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc.stdout?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    proc.stderr?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    const p = proc;
    // ruok -> imok is the readiness answer; a server without four-letter words refuses it, so srvr stands in.
    const probe = mode === "all" ? "ruok" : "srvr";
    await waitFor(
      `zookeeper on 127.0.0.1:${port} answering ${probe}`,
      async () => {
        if (p.exitCode !== null) throw new Error(`zookeeper exited with ${p.exitCode}: ${output}`);
        const answer = await fourLetter(port, probe, 1000);
        return mode === "all" ? answer === "imok" : /Mode: standalone/.test(answer);
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  };

  const killJvm = async () => {
    const p = proc;
    if (p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    p.kill("SIGKILL");
    await exited;
  };

  await launch();
  return {
    port,
    connect: `127.0.0.1:${port}`,
    dataDir,
    fourLetterWords: mode,
    async client(o = {}) {
      const c = await connectClient(o.connect ?? `127.0.0.1:${port}`, o.sessionTimeoutMs ?? 6000);
      clients.push(c);
      return c;
    },
    fourLetter: (cmd) => fourLetter(port, cmd),
    kill: killJvm,
    restart: launch,
    async stop() {
      for (const c of clients) c.close();
      await killJvm();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

// Promise wrappers over the callback API, for contenders written the way the recipes write them.

export function zkCreate(c: zookeeper.Client, path: string, data: Buffer | null, mode: number): Promise<string> {
  return new Promise((resolve, reject) =>
    c.create(path, data ?? Buffer.alloc(0), mode, (err, created) => (err ? reject(err) : resolve(created))),
  );
}

export function zkMkdirp(c: zookeeper.Client, path: string, data?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const cb = (err: zookeeper.Exception | null) => (err ? reject(err) : resolve());
    if (data) c.mkdirp(path, data, cb);
    else c.mkdirp(path, cb);
  });
}

export function zkRemove(c: zookeeper.Client, path: string): Promise<void> {
  return new Promise((resolve, reject) => c.remove(path, (err) => (err ? reject(err) : resolve())));
}

/** exists() with a watch, as a waiter does on its predecessor; resolves with whether the node exists. */
export function zkWatchExists(
  c: zookeeper.Client,
  path: string,
  onEvent: () => void = () => undefined,
): Promise<boolean> {
  return new Promise((resolve, reject) =>
    c.exists(
      path,
      () => onEvent(),
      (err, stat) => (err ? reject(err) : resolve(stat !== null)),
    ),
  );
}

/** getChildren() with a watch, as a zk-lock waiter does on the parent (the herd). */
export function zkWatchChildren(
  c: zookeeper.Client,
  path: string,
  onEvent: () => void = () => undefined,
): Promise<string[]> {
  return new Promise((resolve, reject) =>
    c.getChildren(
      path,
      () => onEvent(),
      (err, children) => (err ? reject(err) : resolve(children)),
    ),
  );
}

export const CreateMode = zookeeper.CreateMode;

export interface TcpProxy {
  port: number;
  /** Stops listening and drops every connection: the client sees its server vanish (refused reconnects). */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A loopback TCP forwarder, to take one client's network away without touching the server or other clients. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = connect({ host: "127.0.0.1", port: targetPort });
    sockets.add(inbound);
    sockets.add(outbound);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    const drop = () => {
      inbound.destroy();
      outbound.destroy();
      sockets.delete(inbound);
      sockets.delete(outbound);
    };
    inbound.on("error", drop).on("close", drop);
    outbound.on("error", drop).on("close", drop);
  });
  const listen = () =>
    new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, "127.0.0.1", () => resolve()));
  const cut = async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
      sockets.clear();
    });
  };
  await listen();
  return { port, cut, restore: listen, close: () => (server.listening ? cut() : Promise.resolve()) };
}
