import net from "node:net";
import RedisParser from "redis-parser";
import type { Redis } from "ioredis";

/**
 * A second, lean connection for the bulk reads of lock keys (PTTL, GETRANGE, HSCAN, ... pipelined, hundreds a
 * batch), next to the ioredis connection that does everything else.
 *
 * Why: ioredis builds per command an object, its promise, its argument list and a timeout timer, about 4.5 to 9 µs
 * of the agent's CPU a command and most of the agent's garbage (BENCHMARKS.md, issue 11). Here a batch is one
 * string written once, parsed by redis-parser (the RESP2 parser ioredis itself uses), with one timer a batch:
 * 100,000 tracked keys' PTTL and GETRANGE cost the agent 98 to 199 ms of CPU against 1,654 to 2,530 ms through
 * ioredis pipelines, and the server the same time either way (bench/lean-reads.ts, BENCHMARKS.md).
 *
 * What it is not: a general client. It sends only what the caller gives it, never retries or reconnects by itself
 * (LeanCompanion decides), and answers `null` rather than fail whenever it cannot answer, so that the caller sends
 * the same batch through ioredis: a failure here changes how a read travels, never what it returns.
 */

export type Arg = string | Buffer | number;
/** As ioredis's pipeline returns it: an error reply in place, or the reply (Buffers for strings, numbers). */
export type Reply = [Error | null, unknown];

/** Where and as whom ioredis connected: what a plain socket needs to do the same. */
export interface LeanAddress {
  host: string;
  port: number;
  path?: string;
  family?: number;
  username?: string;
  password?: string;
  db: number;
}

/**
 * The address of an ioredis client's server, when a plain TCP or Unix socket reaches it as ioredis does; null for
 * TLS (rediss://), Sentinel or a custom connector, which stay on ioredis alone.
 */
export function leanAddressOf(client: Redis): LeanAddress | null {
  const o = client.options as Redis["options"] & { sentinels?: unknown[]; path?: string };
  if (o.tls || (o.sentinels && o.sentinels.length > 0)) return null;
  const address: LeanAddress = { host: o.host ?? "127.0.0.1", port: Number(o.port ?? 6379), db: Number(o.db ?? 0) };
  if (o.path) address.path = o.path;
  if (o.family) address.family = o.family;
  if (o.username) address.username = o.username;
  if (o.password) address.password = o.password;
  return address;
}

/**
 * RESP2 for a batch of commands: one string when every argument is text (the common case: ASCII keys are sent as
 * strings, see redis-client.ts onWire), else one Buffer with binary arguments copied in as they are.
 */
export function encodeCommands(commands: ReadonlyArray<readonly Arg[]>): string | Buffer {
  let text = "";
  let chunks: Buffer[] | null = null;
  for (const command of commands) {
    text += `*${command.length}\r\n`;
    for (const arg of command) {
      if (typeof arg === "string") text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
      else if (typeof arg === "number") {
        const s = String(arg);
        text += `$${s.length}\r\n${s}\r\n`;
      } else {
        chunks ??= [];
        chunks.push(Buffer.from(`${text}$${arg.length}\r\n`), arg);
        text = "\r\n";
      }
    }
  }
  if (!chunks) return text;
  chunks.push(Buffer.from(text));
  return Buffer.concat(chunks);
}

interface Pending {
  n: number;
  out: Reply[];
  resolve: (replies: Reply[]) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export interface LeanConnectionOptions {
  name: string;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  /** Once, when the connection ends for any reason other than close(). */
  onLost: (reason: string) => void;
}

/** One socket, batches in order, every reply matched to its batch; any failure ends it. */
export class LeanConnection {
  private readonly socket: net.Socket;
  private readonly parser: RedisParser;
  private readonly queue: Pending[] = [];
  private ended: string | null = null;

  constructor(
    private readonly address: LeanAddress,
    private readonly opts: LeanConnectionOptions,
  ) {
    this.parser = new RedisParser({
      returnBuffers: true,
      returnReply: (reply) => this.reply(null, reply),
      returnError: (err) => this.reply(err, null),
      returnFatalError: (err) => this.end(`unreadable reply: ${err.message}`),
    });
    this.socket = address.path
      ? net.connect({ path: address.path })
      : net.connect({ host: address.host, port: address.port, ...(address.family ? { family: address.family } : {}) });
    this.socket.setNoDelay(true);
    this.socket.setKeepAlive(true, 30_000);
    this.socket.on("data", (data: Buffer) => this.parser.execute(data));
    this.socket.on("error", (err) => this.end(err.message));
    this.socket.on("close", () => this.end("connection closed"));
  }

  /**
   * Connected, signed in, its database selected and named (CLIENT SETNAME, so that operators see it in CLIENT
   * LIST), then `setup` (CLIENT TRACKING ...). Throws, and ends the connection, on any error or refusal.
   */
  async open(setup: ReadonlyArray<readonly Arg[]> = []): Promise<void> {
    const address = this.address;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.end(`connect timed out after ${this.opts.connectTimeoutMs} ms`);
        reject(new Error(this.ended!));
      }, this.opts.connectTimeoutMs);
      this.socket.once("connect", () => {
        clearTimeout(timer);
        resolve();
      });
      this.socket.once("close", () => {
        clearTimeout(timer);
        reject(new Error(this.ended ?? "connection closed"));
      });
    });
    const commands: Arg[][] = [];
    if (address.password !== undefined) {
      commands.push(address.username ? ["AUTH", address.username, address.password] : ["AUTH", address.password]);
    }
    if (address.db !== 0) commands.push(["SELECT", address.db]);
    commands.push(["CLIENT", "SETNAME", this.opts.name], ...setup.map((c) => [...c]));
    const replies = await this.exec(commands);
    const failed = replies.find(([err]) => err);
    if (failed) {
      const i = replies.indexOf(failed);
      const what = String(commands[i]![0]) === "AUTH" ? "AUTH" : commands[i]!.slice(0, 2).join(" ");
      this.close();
      throw new Error(`${what}: ${failed[0]!.message}`);
    }
  }

  get usable(): boolean {
    return this.ended === null;
  }

  /** The batch's replies in order, error replies in place; rejects (and the connection ends) on a failure. */
  exec(commands: ReadonlyArray<readonly Arg[]>): Promise<Reply[]> {
    if (this.ended !== null) return Promise.reject(new Error(this.ended));
    if (commands.length === 0) return Promise.resolve([]);
    return new Promise<Reply[]>((resolve, reject) => {
      const timer = setTimeout(
        () => this.end(`no reply within ${this.opts.commandTimeoutMs} ms`),
        this.opts.commandTimeoutMs,
      );
      timer.unref?.();
      this.queue.push({ n: commands.length, out: [], resolve, reject, timer });
      this.socket.write(encodeCommands(commands));
    });
  }

  close(): void {
    this.end(null);
  }

  private reply(err: Error | null, reply: unknown): void {
    const head = this.queue[0];
    if (!head) {
      // Nothing was asked: this is not a connection whose replies can be trusted any more.
      this.end("a reply that no command asked for");
      return;
    }
    head.out.push([err, reply]);
    if (head.out.length < head.n) return;
    this.queue.shift();
    clearTimeout(head.timer);
    head.resolve(head.out);
  }

  /** reason null: closed by its owner (no onLost). */
  private end(reason: string | null): void {
    if (this.ended !== null) return;
    this.ended = reason ?? "closed";
    this.socket.destroy();
    for (const p of this.queue.splice(0)) {
      clearTimeout(p.timer);
      p.reject(new Error(this.ended));
    }
    if (reason !== null) this.opts.onLost(reason);
  }
}

/** What CLIENT TRACKING (client-tracking.ts) needs of the reader's lean companion. */
export interface TrackedCompanion {
  /**
   * Tracking with this redirect on the lean connection (the same connection re-enabled, or a new one); false when
   * it could not be had (the reader then carries every read).
   */
  track(redirectId: string): Promise<boolean>;
  /** Tracking was refused for good: reads untracked are as good as the reader's (the source polls). */
  untracked(): void;
  /** Called when a tracked lean connection was lost: its keys' invalidations are gone with it. */
  onLost(listener: (reason: string) => void): void;
  close(): void;
}

/** After a lean connection could not be opened (or was lost, untracked), how long before the next try, by default. */
const RETRY_MS = 5_000;

/**
 * The lean connection of one ioredis reader (the port's client), opened and replaced as the reader's state needs:
 * - untracked (change detection `poll`, or tracking refused): opened on the first batch, reopened after a failure
 *   at most every 5 s; a batch sent meanwhile goes through ioredis;
 * - tracked (`track`): used only once CLIENT TRACKING is on for it too, redirected to the same invalidation
 *   connection as the reader (track(): re-enabled on the same connection with a new redirect, as the reader is,
 *   or a new connection). When it is lost, listeners hear it: its keys' tracking is gone with it, so client
 *   tracking reports tracking lost (the source polls, through the reader meanwhile) and enables it again, which
 *   re-reads every known key.
 */
export class LeanCompanion implements TrackedCompanion {
  private conn: LeanConnection | null = null;
  private opening: Promise<void> | null = null;
  private retryAt = 0;
  private tracked: boolean;
  private closed = false;
  private lastFailure = "";
  private readonly lostListeners: Array<(reason: string) => void> = [];

  constructor(
    private readonly client: Redis,
    private readonly opts: {
      tracked: boolean;
      commandTimeoutMs: number;
      /** After a failed open or a lost untracked connection; default 5 s. */
      retryMs?: number;
      /** Why it could not be opened, once per distinct reason (it is an optimisation: nothing fails without it). */
      log?: (line: string) => void;
    },
    private readonly address: LeanAddress | null = leanAddressOf(client),
  ) {
    this.tracked = opts.tracked;
    client.once("end", () => this.close());
    // Untracked, it opens with the reader (and again when the reader reconnects after losing it).
    client.on("ready", () => this.openUntracked());
    this.openUntracked();
  }

  /** The batch's replies, or null when the caller must send it through ioredis. */
  async exec(commands: ReadonlyArray<readonly Arg[]>): Promise<Reply[] | null> {
    const conn = this.conn;
    if (!conn?.usable) {
      if (!this.tracked) this.openUntracked();
      return null;
    }
    try {
      return await conn.exec(commands);
    } catch {
      return null; // lost (onLost says so); the same batch goes through ioredis
    }
  }

  async track(redirectId: string): Promise<boolean> {
    this.tracked = true;
    const on: Arg[] = ["CLIENT", "TRACKING", "ON", "REDIRECT", redirectId];
    const current = this.conn;
    if (current?.usable) {
      // Re-enabled with a new redirect (the invalidation connection was replaced) on the same connection, as the
      // reader is: the keys it has read stay tracked, as the reader's do.
      const [reply] = await current.exec([on]).catch(() => [] as Reply[]);
      if (reply && !reply[0]) return true;
      current.close();
    }
    this.conn = null;
    const conn = await this.connect([on]);
    if (!conn) return false;
    (this.conn as LeanConnection | null)?.close(); // a track() that overlapped this one: the later redirect wins
    this.conn = conn;
    return true;
  }

  untracked(): void {
    this.tracked = false;
    this.openUntracked();
  }

  onLost(listener: (reason: string) => void): void {
    this.lostListeners.push(listener);
  }

  close(): void {
    this.closed = true;
    this.conn?.close();
    this.conn = null;
  }

  private openUntracked(): void {
    if (
      this.tracked ||
      this.conn?.usable ||
      this.opening ||
      this.closed ||
      Date.now() < this.retryAt ||
      this.client.status !== "ready"
    )
      return;
    this.opening = this.connect([])
      .then((conn) => {
        if (conn && !this.tracked && !this.closed) this.conn = conn;
        else conn?.close();
      })
      .finally(() => (this.opening = null));
  }

  private async connect(setup: ReadonlyArray<readonly Arg[]>): Promise<LeanConnection | null> {
    if (!this.address || this.closed) return null;
    const conn: LeanConnection = new LeanConnection(this.address, {
      name: "lockscope-agent-reads",
      connectTimeoutMs: Math.max(1000, this.opts.commandTimeoutMs),
      commandTimeoutMs: this.opts.commandTimeoutMs,
      onLost: (reason) => {
        if (this.conn !== conn) return;
        this.conn = null;
        this.retryAt = Date.now() + (this.opts.retryMs ?? RETRY_MS);
        if (this.tracked) for (const l of this.lostListeners) l(`the bulk-read connection was lost (${reason})`);
      },
    });
    try {
      await conn.open(setup);
    } catch (err) {
      this.retryAt = Date.now() + (this.opts.retryMs ?? RETRY_MS);
      const reason = err instanceof Error ? err.message : String(err);
      if (reason !== this.lastFailure && !this.closed) {
        const where = this.address.path ?? `${this.address.host}:${this.address.port}`;
        this.opts.log?.(
          `bulk-read connection to ${where} not opened (${reason}); the reads go through the main connection`,
        );
      }
      this.lastFailure = reason;
      return null; // ioredis carries every read meanwhile, as it did before this connection existed
    }
    this.lastFailure = "";
    if (this.closed) {
      conn.close();
      return null;
    }
    return conn;
  }
}
