/**
 * ZkPort and FourLetterWordPort over node-zookeeper-client 1.1.3 and plain TCP. Only I/O and the library's quirks
 * live here; what the answers mean is decided elsewhere.
 */
import { connect as tcpConnect } from "node:net";
import zookeeper from "node-zookeeper-client";
import type { FourLetterWord } from "./four-letter-words";
import type { ZkServerAddress } from "./zk-config";
import type { FourLetterWordPort, ZkConnectionState, ZkDeleteResult, ZkPort, ZkPortListener, ZkStat } from "./zk-port";

/** 8-byte big-endian id (session, zxid) as the 0x hex the server's four-letter words print. */
export function longToHex(buf: Buffer | undefined): string {
  if (!buf || buf.length !== 8) return "0x0";
  return `0x${buf.readBigUInt64BE(0).toString(16)}`;
}

export function longToNumber(buf: Buffer | undefined): number {
  if (!buf || buf.length !== 8) return 0;
  return Number(buf.readBigInt64BE(0));
}

export function toZkStat(s: zookeeper.Stat): ZkStat {
  return {
    czxid: longToHex(s.czxid),
    ctimeMs: longToNumber(s.ctime),
    ephemeralOwner: longToHex(s.ephemeralOwner),
    version: s.version,
    dataLength: s.dataLength,
    numChildren: s.numChildren,
  };
}

export interface NodeZkPortOptions {
  connect: string;
  auth: { user: string; password: string } | null;
  sessionTimeoutMs: number;
  requestTimeoutMs: number;
  log: (line: string) => void;
}

const NO_NODE = zookeeper.Exception.NO_NODE;

function errorCode(err: unknown): unknown {
  return typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
}

function isNoNode(err: unknown): boolean {
  return errorCode(err) === NO_NODE;
}

const DELETE_OUTCOMES = new Map<unknown, ZkDeleteResult>([
  [zookeeper.Exception.NO_NODE, "no-node"],
  [zookeeper.Exception.BAD_VERSION, "bad-version"],
  [zookeeper.Exception.NOT_EMPTY, "not-empty"],
]);

/**
 * One agent session. node-zookeeper-client reconnects by itself (and re-sends its watches) while the session
 * lives, but gives up for good once the session has expired: then a new client is made here and the listener sees
 * "expired" followed by "connected" with another session id, which tells the source to re-arm and resync.
 */
export class NodeZkPort implements ZkPort {
  private client: zookeeper.Client | null = null;
  private current: ZkConnectionState = "connecting";
  private listener: ZkPortListener | null = null;
  private closed = false;
  /**
   * The library adds a watcher per call unless it is the same function as one already armed for the path: one
   * stable function per path keeps repeated reads from piling up listeners.
   */
  private readonly watchers = new Map<string, zookeeper.Watcher>();

  constructor(private readonly opts: NodeZkPortOptions) {}

  setListener(listener: ZkPortListener): void {
    this.listener = listener;
  }

  start(): void {
    if (this.closed || this.client) return;
    const client = zookeeper.createClient(this.opts.connect, {
      sessionTimeout: this.opts.sessionTimeoutMs,
      spinDelay: 500,
      retries: 0,
    });
    if (this.opts.auth) client.addAuthInfo("digest", Buffer.from(`${this.opts.auth.user}:${this.opts.auth.password}`));
    client.on("connected", () => this.setState(client, "connected"));
    client.on("connectedReadOnly", () => this.setState(client, "connected"));
    client.on("disconnected", () => this.setState(client, "disconnected"));
    client.on("authenticationFailed", () => this.setState(client, "auth-failed"));
    client.on("expired", () => {
      this.setState(client, "expired");
      this.replace(client);
    });
    this.client = client;
    this.current = "connecting";
    client.connect();
  }

  private setState(from: zookeeper.Client, state: ZkConnectionState): void {
    if (from !== this.client || this.closed) return;
    this.current = state;
    this.listener?.onState(state, this.session());
  }

  /** The old client is finished once its session expired: close it and start over with a fresh session. */
  private replace(old: zookeeper.Client): void {
    if (old !== this.client) return;
    this.client = null;
    try {
      old.close();
    } catch {
      // Already closed by the library.
    }
    this.opts.log("zookeeper session expired; opening a new session");
    this.start();
  }

  state(): ZkConnectionState {
    return this.current;
  }

  session(): string | null {
    if (!this.client || this.current !== "connected") return null;
    return longToHex(this.client.getSessionId());
  }

  /**
   * Session id and password. Used by tests to expire the agent's session the way ZooKeeper's own tests do: a
   * second client attaches to the same session and closes it.
   */
  sessionCredentials(): { id: Buffer; password: Buffer } | null {
    const c = this.client as (zookeeper.Client & { getSessionPassword(): Buffer }) | null;
    if (!c || this.current !== "connected") return null;
    return { id: c.getSessionId(), password: c.getSessionPassword() };
  }

  private watcherFor(path: string): zookeeper.Watcher {
    let w = this.watchers.get(path);
    if (!w) {
      w = () => this.listener?.onWatch(path);
      this.watchers.set(path, w);
    }
    return w;
  }

  /**
   * The library queues requests while disconnected and never times them out: every call gets its own deadline so
   * a poll during an outage fails fast instead of hanging.
   */
  private call<T>(
    what: string,
    run: (client: zookeeper.Client, done: (err: unknown, value?: T) => void) => void,
  ): Promise<T> {
    const client = this.client;
    if (!client || this.closed) return Promise.reject(new Error(`zookeeper ${what}: not connected`));
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        reject(new Error(`zookeeper ${what}: no answer within ${this.opts.requestTimeoutMs} ms`));
      }, this.opts.requestTimeoutMs);
      run(client, (err, value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err instanceof Error ? err : new Error(String(err)));
        else resolve(value as T);
      });
    });
  }

  getChildren(path: string, watch: boolean): Promise<{ children: string[]; stat: ZkStat } | null> {
    return this.call(`getChildren ${path}`, (client, done) => {
      const cb = (err: zookeeper.Exception | null, children: string[], stat: zookeeper.Stat) => {
        if (isNoNode(err)) done(null, null);
        else if (err) done(err);
        else done(null, { children: children ?? [], stat: toZkStat(stat) });
      };
      if (watch) client.getChildren(path, this.watcherFor(path), cb);
      else client.getChildren(path, cb);
    });
  }

  getData(path: string, maxBytes: number): Promise<{ data: Buffer | null; stat: ZkStat } | null> {
    return this.call(`getData ${path}`, (client, done) => {
      client.getData(path, (err, data, stat) => {
        if (isNoNode(err)) done(null, null);
        else if (err) done(err);
        else {
          const bytes = data && data.length > 0 ? Buffer.from(data.subarray(0, maxBytes)) : null;
          done(null, { data: bytes, stat: toZkStat(stat) });
        }
      });
    });
  }

  exists(path: string, watch: boolean): Promise<ZkStat | null> {
    return this.call(`exists ${path}`, (client, done) => {
      const cb = (err: zookeeper.Exception | null, stat: zookeeper.Stat | null) => {
        if (err) done(err);
        else done(null, stat ? toZkStat(stat) : null);
      };
      if (watch) client.exists(path, this.watcherFor(path), cb);
      else client.exists(path, cb);
    });
  }

  delete(path: string, version: number): Promise<ZkDeleteResult> {
    // -1 would mean "whatever version": a force-release must only ever delete the node it checked.
    if (!Number.isInteger(version) || version < 0) return Promise.reject(new Error(`delete ${path}: bad version`));
    return this.call(`delete ${path}`, (client, done) => {
      client.remove(path, version, (err) => {
        const known = err ? DELETE_OUTCOMES.get(errorCode(err)) : "deleted";
        if (known) done(null, known);
        else done(err);
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = null;
    this.current = "closed";
    if (!client) return;
    // CLOSE_SESSION lets the server drop the agent's session (and its watches) now rather than at its timeout.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      client.once("disconnected", () => {
        clearTimeout(timer);
        resolve();
      });
      client.close();
    });
    // The library keeps a socket only while connected; make sure nothing is left to keep the process alive.
    const cm = (client as unknown as { connectionManager?: { socket?: { destroy(): void } } }).connectionManager;
    cm?.socket?.destroy();
  }
}

export interface FourLetterWordOptions {
  timeoutMs: number;
  /** A huge watch table is cut here (and the last partial line dropped by the parsers). */
  maxBytes: number;
}

/** Four-letter words over a plain TCP connection: send the word, read until the server closes. */
export class TcpFourLetterWords implements FourLetterWordPort {
  constructor(private readonly opts: FourLetterWordOptions = { timeoutMs: 3000, maxBytes: 16 * 1024 * 1024 }) {}

  send(server: ZkServerAddress, cmd: FourLetterWord): Promise<{ text: string; truncated: boolean }> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      let done = false;
      const socket = tcpConnect({ host: server.host, port: server.port });
      const finish = (err: Error | null) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        socket.destroy();
        if (err) reject(err);
        else resolve({ text: Buffer.concat(chunks).toString("utf8"), truncated });
      };
      const timer = setTimeout(
        () =>
          finish(
            new Error(`${cmd} to ${server.host}:${server.port}: no complete answer within ${this.opts.timeoutMs} ms`),
          ),
        this.opts.timeoutMs,
      );
      socket.on("connect", () => socket.write(cmd));
      socket.on("data", (d: Buffer) => {
        if (size + d.length > this.opts.maxBytes) {
          chunks.push(d.subarray(0, this.opts.maxBytes - size));
          truncated = true;
          finish(null);
          return;
        }
        chunks.push(d);
        size += d.length;
      });
      socket.on("end", () => finish(null));
      socket.on("close", () => finish(null));
      socket.on("error", (err) => finish(new Error(`${cmd} to ${server.host}:${server.port}: ${err.message}`)));
    });
  }
}
