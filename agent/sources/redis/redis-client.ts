import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { loadLua } from "./lua-scripts";
import type { RedisReleasePort } from "./redis-release";
import { parseRedirect } from "./cluster-nodes";
import { TypeGuesses } from "./type-guess";
import type { Arg, LeanCompanion, Reply } from "./lean-connection";
import type { KeySample, RedisLockPort, RedisNodePort, RedisReplicaPort } from "./redis-port";

/** How many fields, members or items one sample reads at most: a lock key is small; a huge one is shown cut. */
export const PAGE = 20;

export interface RedisConnectionOptions {
  url: string;
  commandTimeoutMs: number;
  onStatus: (up: boolean, error?: string) => void;
}

/**
 * ioredis with the settings a watcher of production servers needs: no offline queue (a command while down fails
 * at once instead of piling up), a per-command timeout, and reconnects with capped backoff.
 */
export function connectRedis(opts: RedisConnectionOptions): Redis {
  const client = new Redis(opts.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs,
    connectTimeout: Math.max(1000, opts.commandTimeoutMs),
    connectionName: "lockscope-agent",
    retryStrategy: (times) => Math.min(200 * 2 ** Math.min(times, 8), 10_000),
    // Never follow a replica's READONLY or a cluster redirect into writes: the agent only reads.
    autoResubscribe: false,
    // What the old connection had sent and not had answered is not replayed on the new one (it fails at its
    // timeout): a CLIENT TRACKING ... REDIRECT <id> of the old server would point this reader at whatever
    // connection of the new one has that id, a SCAN cursor of the old server means nothing to the new one, and a
    // release must not run after its caller was told it timed out.
    autoResendUnfulfilledCommands: false,
  });
  client.on("ready", () => opts.onStatus(true));
  client.on("error", (err: Error) => opts.onStatus(false, err.message));
  client.on("end", () => opts.onStatus(false, "connection closed"));
  client.on("close", () => opts.onStatus(false, "connection closed"));
  return client;
}

/**
 * Errors that mean the server cannot answer for any key right now (loading its dataset, a long script, the
 * cluster down or mid-failover): a read that fails so proves nothing about the key, so the whole read fails.
 */
const UNAVAILABLE = /^(?:ReplyError: )?(?:LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN)\b/;

/** The types sample() reads a body of (others get TYPE and PTTL only). */
const READ_TYPES = new Set(["string", "hash", "zset", "list", "set"]);
/** A type read() has no reads for: it sends TYPE and PTTL only (for a key whose type is not known yet). */
const TYPE_ONLY = "none";

/**
 * A key as the bulk reads send it: an ASCII key as a string (the same bytes on the wire), any other as its bytes.
 * ioredis builds a command whose arguments are all strings as one string, and one with a Buffer argument piece by
 * piece into a new Buffer: 15 to 25% more of the agent's CPU a command in a micro-benchmark of pipelined PTTL and
 * GETRANGE (BENCHMARKS.md, issue 11).
 */
export function onWire(key: Buffer): Buffer | string {
  return isAscii(key) ? key.toString("latin1") : key;
}

function asNumber(r: Reply | undefined): number {
  if (!r || r[0]) return 0;
  return Number(r[1]);
}

export class IoredisLockPort implements RedisLockPort {
  /**
   * lean: the reader's lean connection (lean-connection.ts), which carries the bulk reads when it can (a batch it
   * cannot answer goes through ioredis, with the same replies).
   */
  constructor(
    private readonly client: Redis,
    private readonly lean: LeanCompanion | null = null,
  ) {}

  /** One batch of read commands, pipelined: on the lean connection when it is up, else through ioredis. */
  private async bulk(commands: Arg[][]): Promise<Reply[]> {
    const replies = await this.lean?.exec(commands);
    if (replies) return replies;
    const p = this.client.pipeline();
    for (const [name, ...args] of commands) p.callBuffer(String(name), ...args);
    return ((await p.exec()) ?? []) as Reply[];
  }

  async scan(cursor: string, count: number, match?: Buffer) {
    // MATCH as raw bytes (scanBuffer types it as a string, which ioredis would send as UTF-8).
    const [next, keys] = match
      ? ((await this.client.callBuffer("SCAN", cursor, "MATCH", match, "COUNT", count)) as [Buffer, Buffer[]])
      : await this.client.scanBuffer(cursor, "COUNT", count);
    return { cursor: next.toString(), keys };
  }

  /** What the keys of each family read so far turned out to be (type-guess.ts): the first read of a new key. */
  private readonly guesses = new TypeGuesses();

  /**
   * A key of unknown type is read as a string (most locks are) with PTTL and GETRANGE only, one round trip: a value
   * shorter than the prefix read is then read whole (its length is the prefix's), and PTTL -2 is a key gone. When
   * the keys of its family read so far were mostly of another type, it is read as that type instead, PTTL and the
   * bounded read (HSCAN, ZRANGE, LRANGE or SSCAN): whole when the page held all of it. A longer value, or a key
   * known by type, is read fully (TYPE, PTTL, length, bounded read); a key of another type than its first read
   * assumed (WRONGTYPE) or whose quick read failed gets TYPE and PTTL, then the reads for its type in a third
   * pipeline. Each command through ioredis costs the agent about 4.5 to 8 µs of CPU (10,000 PTTLs pipelined: 45
   * ms; about 0.6 µs on the lean connection), and the reads of the 10,000 new locks held up the discovery pass: 2
   * commands instead of 4 for a short string, a small value of its family's type or a missing key, 8 as before for
   * a key whose first read assumed the wrong type.
   */
  async sample(keys: Buffer[], expectedTypes: ReadonlyArray<string | undefined>, previewBytes: number) {
    const out: Array<KeySample | null> = keys.map(() => null);
    const readAs = keys.map((_, i) => expectedTypes[i]);
    const unknown = keys.flatMap((_, i) => (expectedTypes[i] === undefined ? [i] : []));
    if (unknown.length > 0) {
      const quick = await this.quickRead(
        unknown.map((i) => keys[i]!),
        previewBytes,
      );
      unknown.forEach((i, j) => {
        const q = quick[j]!;
        if (typeof q === "string") readAs[i] = q;
        else out[i] = q;
      });
    }
    const rest = keys.flatMap((_, i) => (out[i] === null ? [i] : []));
    if (rest.length > 0) {
      const full = await this.read(
        rest.map((i) => keys[i]!),
        rest.map((i) => readAs[i]!),
        previewBytes,
      );
      rest.forEach((i, j) => (out[i] = full[j]!));
      const again = rest.filter(
        (i) => expectedTypes[i] === undefined && out[i]!.type !== readAs[i] && READ_TYPES.has(out[i]!.type),
      );
      if (again.length > 0) {
        const second = await this.read(
          again.map((i) => keys[i]!),
          again.map((i) => out[i]!.type),
          previewBytes,
        );
        again.forEach((i, j) => (out[i] = second[j]!));
      }
    }
    for (const i of unknown) if (!out[i]!.moved) this.guesses.learn(keys[i]!, out[i]!.type);
    return out as KeySample[];
  }

  /**
   * PTTL and a bounded read per key, pipelined: GETRANGE, or the read of the type its family's keys mostly had.
   * The sample of a key that is gone or whose read saw all of it (what the full read would show); else how to read
   * it fully: its type (a longer value) or TYPE_ONLY (another type than assumed, or the read failed: TYPE first).
   */
  private async quickRead(keys: Buffer[], previewBytes: number): Promise<Array<KeySample | string>> {
    const assumed = keys.map((key) => {
      const guess = this.guesses.guess(key);
      return guess !== undefined && READ_TYPES.has(guess) ? guess : "string";
    });
    const commands: Arg[][] = [];
    keys.forEach((key, i) => {
      const k = onWire(key);
      commands.push(["PTTL", k], boundedRead(k, assumed[i]!, previewBytes));
    });
    const replies = await this.bulk(commands);
    return keys.map((key, i) => {
      const [ttl, body] = [replies[2 * i], replies[2 * i + 1]];
      const failed = ttl?.[0] ?? body?.[0];
      if (failed && UNAVAILABLE.test(failed.message)) throw failed;
      if (!ttl || !body || failed) return TYPE_ONLY;
      const pttl = Number(ttl[1]);
      if (pttl === -2) return { key, type: "none", pttl };
      const type = assumed[i]!;
      const whole = wholeValue(key, type, pttl, body[1], previewBytes);
      return whole ?? type;
    });
  }

  /** TYPE, PTTL and, when the key is still of the given type, its length and bounded read; one pipeline. */
  private async read(keys: Buffer[], known: readonly string[], previewBytes: number): Promise<KeySample[]> {
    const commands: Arg[][] = [];
    const plan: number[] = [];
    keys.forEach((key, i) => {
      const type = known[i]!;
      const k = onWire(key);
      commands.push(["TYPE", k], ["PTTL", k]);
      const length = LENGTH_OF.get(type);
      if (length) commands.push([length, k], boundedRead(k, type, previewBytes));
      plan.push(length ? 4 : 2);
    });
    const replies = await this.bulk(commands);
    const out: KeySample[] = [];
    let at = 0;
    keys.forEach((key, i) => {
      const r = replies.slice(at, at + plan[i]!);
      at += plan[i]!;
      const failed = r[0]?.[0] ?? r[1]?.[0];
      if (failed && parseRedirect(failed.message)) {
        out.push({ key, type: "none", pttl: -2, moved: failed.message });
        return;
      }
      if (failed && UNAVAILABLE.test(failed.message)) throw failed;
      const type = r[0] && !r[0][0] ? String(r[0][1]) : "none";
      const sample: KeySample = { key, type, pttl: asNumber(r[1]) };
      // If the type changed since it was last seen, the reads below were for the old type: skip them this round.
      if (type !== known[i] || r.slice(2).some((x) => x[0])) {
        out.push(sample);
        return;
      }
      const length = asNumber(r[2]);
      const body = r[3]?.[1];
      if (type === "string") sample.string = { prefix: body as Buffer, length };
      else if (type === "hash") sample.hash = { length, fields: pairs((body as [Buffer, Buffer[]])[1]) };
      else if (type === "zset") {
        const flat = body as Buffer[];
        sample.zset = { length, members: pairs(flat).map(([m, s]) => [m, Number(s.toString())] as [Buffer, number]) };
      } else if (type === "list") sample.list = { length, items: body as Buffer[] };
      else if (type === "set") sample.set = { length, members: (body as [Buffer, Buffer[]])[1] };
      out.push(sample);
    });
    return out;
  }

  async resample(keys: Buffer[], types: readonly string[], previewBytes: number) {
    const commands: Arg[][] = [];
    keys.forEach((key, i) => {
      const k = onWire(key);
      commands.push(["PTTL", k]);
      if (READ_TYPES.has(types[i]!)) commands.push(boundedRead(k, types[i]!, previewBytes));
    });
    const replies = await this.bulk(commands);
    const out: Array<KeySample | null> = [];
    let at = 0;
    keys.forEach((key, i) => {
      const type = types[i]!;
      const bounded = READ_TYPES.has(type);
      const [ttl, body] = [replies[at], bounded ? replies[at + 1] : undefined];
      at += bounded ? 2 : 1;
      const failed = ttl?.[0] ?? body?.[0];
      if (failed && UNAVAILABLE.test(failed.message)) throw failed;
      // A WRONGTYPE (the type changed), a redirect or any other error, or a read that did not see the whole value
      // (a long string, a large hash): the full read decides.
      out.push(
        !bounded || !ttl || !body || failed ? null : wholeValue(key, type, Number(ttl[1]), body[1], previewBytes),
      );
    });
    return out;
  }

  async countExisting(groups: Buffer[][]) {
    if (groups.length === 0) return [];
    const replies = await this.bulk(groups.map((g) => ["EXISTS", ...g.map(onWire)]));
    return groups.map((_, i) => {
      const r = replies[i];
      if (r?.[0] && UNAVAILABLE.test(r[0].message)) throw r[0];
      return r && !r[0] ? Number(r[1]) : null;
    });
  }

  async numsub(channels: string[]) {
    return this.client.pubsub("NUMSUB", ...channels);
  }

  /** Set by each runId() from INFO server (see halvesScan). */
  private redisCursor = false;

  async runId() {
    const info = await this.client.info("server");
    this.redisCursor = hasRedisScanCursor(info);
    return parseRunId(info);
  }

  halvesScan() {
    return this.redisCursor;
  }

  commandStats() {
    return this.client.info("commandstats");
  }

  async fingerprints(keys: Buffer[], maxBytes: number) {
    if (keys.length === 0) return [];
    const p = this.client.pipeline();
    for (const k of keys) p.evalsha(FINGERPRINT.sha1, 1, k, maxBytes);
    let replies = ((await p.exec()) ?? []) as Reply[];
    if (replies.some(([err]) => err && /NOSCRIPT/.test(err.message))) {
      // First use on this server (or after SCRIPT FLUSH / a restart): send the body once, then by digest again.
      await this.client.script("LOAD", FINGERPRINT.lua);
      const again = this.client.pipeline();
      for (const k of keys) again.evalsha(FINGERPRINT.sha1, 1, k, maxBytes);
      replies = ((await again.exec()) ?? []) as Reply[];
    }
    return keys.map((_, i) => {
      const r = replies[i];
      return r && !r[0] && typeof r[1] === "string" && /^[0-9a-f]{40}$/.test(r[1]) ? r[1] : null;
    });
  }
}

/** INFO sections and CLUSTER NODES on one node. */
export class IoredisNodePort implements RedisNodePort {
  constructor(private readonly client: Redis) {}

  info(section: "replication" | "cluster") {
    return this.client.info(section);
  }

  async clusterNodes() {
    return String(await this.client.call("CLUSTER", "NODES"));
  }
}

/**
 * EXISTS per key on a replica, pipelined. A cluster replica answers key reads only after READONLY (else it
 * redirects to its master), so in cluster mode each pipeline starts with it: cheap, and it survives reconnects.
 */
export class IoredisReplicaPort implements RedisReplicaPort {
  constructor(
    private readonly client: Redis,
    private readonly cluster: boolean,
  ) {}

  async exists(keys: Buffer[]) {
    if (keys.length === 0) {
      await this.client.ping(); // nothing to compare, but proof the replica answers
      return [];
    }
    const p = this.client.pipeline();
    if (this.cluster) p.readonly();
    for (const k of keys) p.exists(k);
    const replies = ((await p.exec()) ?? []) as Reply[];
    const answers = this.cluster ? replies.slice(1) : replies;
    if (answers.length !== keys.length) throw new Error(`EXISTS: ${answers.length} replies for ${keys.length} keys`);
    return answers.map(([err, n]) => {
      if (err) throw err;
      return Number(n) === 1;
    });
  }
}

/** The length command of each type read() reads a body of. */
const LENGTH_OF: ReadonlyMap<string, string> = new Map([
  ["string", "STRLEN"],
  ["hash", "HLEN"],
  ["zset", "ZCARD"],
  ["list", "LLEN"],
  ["set", "SCARD"],
]);

/** The bounded read of `type` (the same as read() and resample() send), one command. */
function boundedRead(k: Buffer | string, type: string, previewBytes: number): Arg[] {
  if (type === "string") return ["GETRANGE", k, 0, previewBytes - 1];
  if (type === "hash") return ["HSCAN", k, "0", "COUNT", PAGE];
  if (type === "zset") return ["ZRANGE", k, 0, PAGE - 1, "WITHSCORES"];
  if (type === "list") return ["LRANGE", k, 0, PAGE - 1];
  return ["SSCAN", k, "0", "COUNT", PAGE];
}

/**
 * The sample a bounded read of `type` implies when it saw the whole value, so that its length is what it read: a
 * string shorter than the prefix read, a zset or list shorter than the page, a hash or set whose scan ended on its
 * first page. Else null (the length needs its own command).
 */
function wholeValue(key: Buffer, type: string, pttl: number, v: unknown, previewBytes: number): KeySample | null {
  if (type === "string") {
    const prefix = v as Buffer;
    return prefix.length < previewBytes ? { key, type, pttl, string: { prefix, length: prefix.length } } : null;
  }
  if (type === "zset" || type === "list") {
    const flat = v as Buffer[];
    if (type === "list")
      return flat.length < PAGE ? { key, type, pttl, list: { length: flat.length, items: flat } } : null;
    const members = pairs(flat).map(([m, s]) => [m, Number(s.toString())] as [Buffer, number]);
    return members.length < PAGE ? { key, type, pttl, zset: { length: members.length, members } } : null;
  }
  const [cursor, flat] = v as [Buffer, Buffer[]];
  if (cursor.toString() !== "0") return null;
  if (type === "hash") return { key, type, pttl, hash: { length: flat.length / 2, fields: pairs(flat) } };
  return { key, type, pttl, set: { length: flat.length, members: flat } };
}

function pairs(flat: Buffer[]): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}

/**
 * Sample of INFO server:
 *   # Server
 *   redis_version:7.0.15
 *   run_id:4f2d8c0e7a9b1c3d5e6f708192a3b4c5d6e7f809
 *   tcp_port:6379
 */
export function parseRunId(info: string): string {
  const m = /^run_id:([0-9a-f]+)\r?$/m.exec(info);
  return m ? m[1]! : "";
}

/**
 * Whether INFO server shows a Redis (or Valkey, KeyDB) server itself, whose SCAN cursor is the reversed-bit bucket
 * cursor that the split pass relies on: it has `redis_mode` and `run_id` (a proxy in front of several servers shows
 * its own format), and no other server's version field (Dragonfly's cursor is its own).
 */
export function hasRedisScanCursor(info: string): boolean {
  if (!/^redis_mode:(standalone|cluster)\r?$/m.test(info) || !/^run_id:[0-9a-f]+\r?$/m.test(info)) return false;
  if (/^dragonfly_version:/m.test(info)) return false;
  const name = /^server_name:(.*?)\r?$/m.exec(info);
  return !name || /^(redis|valkey|keydb)$/i.test(name[1]!);
}

const COMPARE_AND_DELETE = loadLua("compare-and-delete");
const FINGERPRINT = { ...loadLua("fingerprint"), sha1: "" };
FINGERPRINT.sha1 = createHash("sha1").update(FINGERPRINT.lua).digest("hex");
const DELETE_IF_HASH_FIELD = loadLua("delete-if-hash-field");
const PURGE_FAIR_WAITER = loadLua("purge-fair-waiter");

/** The operator's force-release, and nothing else, writes: each step is one atomic Lua script. */
export class IoredisReleasePort implements RedisReleasePort {
  constructor(private readonly client: Redis) {}

  async compareAndDelete(key: Buffer, sha1Hex: string, maxBytes: number) {
    return Number(await this.client.eval(COMPARE_AND_DELETE.lua, 1, key, sha1Hex, maxBytes));
  }

  async purgeFairWaiter(queue: Buffer, timeouts: Buffer, entry: Buffer) {
    return Number(await this.client.eval(PURGE_FAIR_WAITER.lua, 2, queue, timeouts, entry));
  }

  async deleteIfHashField(key: Buffer, field: Buffer, channel: string, message: string) {
    return Number(await this.client.eval(DELETE_IF_HASH_FIELD.lua, 1, key, field, channel, message));
  }
}
