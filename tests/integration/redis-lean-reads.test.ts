import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server, type Socket } from "node:net";
import type { Redis } from "ioredis";
import { WATCH_ONLY_ACL } from "../../agent/sources/redis/acl-rules";
import { LeanCompanion, LeanConnection, leanAddressOf } from "../../agent/sources/redis/lean-connection";
import { connectRedis, IoredisLockPort } from "../../agent/sources/redis/redis-client";
import { startRedis, type RedisServer } from "../harness/redis";
import { waitFor } from "../harness/ports";

/**
 * The lean connection for bulk reads (lean-connection.ts) against a real redis-server: the same samples as the
 * ioredis pipelines, for every type and for hostile keys; signed in as the watch-only ACL user in the reader's
 * database; a connection killed under it or a server that never answers changes how a read travels, not what it
 * returns.
 */
let redis: RedisServer;
let admin: Redis;
const clients: Redis[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = redis.client();
  await admin.call("ACL", "SETUSER", "watcher", "on", ">watch-secret", ...WATCH_ONLY_ACL.split(" "));
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await redis?.stop();
});

/** The agent's reading connection, as the watch-only user, in database 3. */
async function reader(): Promise<Redis> {
  const c = connectRedis({
    url: `redis://watcher:watch-secret@127.0.0.1:${redis.port}/3`,
    commandTimeoutMs: 1000,
    onStatus: () => undefined,
  });
  clients.push(c);
  await c.connect();
  return c;
}

interface ClientLine {
  id: string;
  user: string;
  db: string;
  cmd: string;
}

async function leanClients(): Promise<ClientLine[]> {
  const list = String(await admin.call("CLIENT", "LIST"));
  return [...list.matchAll(/id=(\d+) [^\n]*name=lockscope-agent-reads [^\n]*db=(\d+) [^\n]*cmd=(\S+) user=(\S+)/g)].map(
    (m) => ({ id: m[1]!, db: m[2]!, cmd: m[3]!, user: m[4]! }),
  );
}

const HOSTILE = [
  "lock:plain",
  "lock:\r\n*1\r\n$4\r\nPING\r\n",
  "lock:é-ü-☃",
  "lock:hash",
  "lock:zset",
  "lock:list",
  "lock:set",
  "lock:long",
  "lock:missing",
];

describe("the lean connection's bulk reads", () => {
  it("give the same samples as the ioredis pipelines, for every type, hostile keys and binary values", async () => {
    const db3 = redis.client();
    await db3.select(3);
    const binaryKey = Buffer.from([0x6c, 0x6f, 0x63, 0x6b, 0x3a, 0xff, 0xfe, 0x00, 0x0d, 0x0a]);
    await db3.set("lock:plain", "token-1", "PX", 60_000);
    await db3.set("lock:\r\n*1\r\n$4\r\nPING\r\n", Buffer.from([0, 1, 2, 0xff, 0x0d, 0x0a]), "PX", 60_000);
    await db3.set("lock:é-ü-☃", "x");
    await db3.set(binaryKey, "binary-key", "PX", 60_000);
    await db3.hset("lock:hash", "8d6f:1", "1");
    await db3.zadd("lock:zset", 1, "a", 2, "b");
    await db3.rpush("lock:list", "w1", "w2");
    await db3.sadd("lock:set", "m1");
    await db3.set("lock:long", "y".repeat(100_000));
    const keys = [...HOSTILE.map((k) => Buffer.from(k)), binaryKey];
    const types = ["string", "string", "string", "hash", "zset", "list", "set", "string", "none", "string"];

    const client = await reader();
    const lean = new LeanCompanion(client, { tracked: false, commandTimeoutMs: 1000 });
    const viaLean = new IoredisLockPort(client, lean);
    const viaIoredis = new IoredisLockPort(client);
    await waitFor("the lean connection open", async () => (await leanClients()).length === 1);
    for (const expected of [[], types]) {
      const [a, b] = [await viaLean.sample(keys, expected, 256), await viaIoredis.sample(keys, expected, 256)];
      expect(a.map((s) => s.type)).toEqual(types);
      a.forEach((s, i) => {
        expect({ ...s, pttl: 0 }, HOSTILE[i] ?? "binary key").toEqual({ ...b[i]!, pttl: 0 });
        expect(Math.abs(s.pttl - b[i]!.pttl)).toBeLessThan(1000);
      });
    }
    const sweep = await viaLean.resample(keys, types, 256);
    expect(sweep.map((s) => s?.string?.prefix.toString("latin1") ?? null)).toEqual(
      (await viaIoredis.resample(keys, types, 256)).map((s) => s?.string?.prefix.toString("latin1") ?? null),
    );
    expect(await viaLean.countExisting([[keys[0]!, keys[8]!], [binaryKey]])).toEqual([1, 1]);
    // The reads went through it, signed in as the reader's user, in the reader's database.
    const [line] = await leanClients();
    expect(line).toMatchObject({ user: "watcher", db: "3", cmd: "exists" });
    lean.close();
    await waitFor("the lean connection closed", async () => (await leanClients()).length === 0);
  });

  it("answers through ioredis while its connection is killed, and opens a new one", async () => {
    await admin.set("lock:killed", "owner-1", "PX", 60_000);
    const client = connectRedis({ url: redis.url, commandTimeoutMs: 1000, onStatus: () => undefined });
    clients.push(client);
    await client.connect();
    const lean = new LeanCompanion(client, { tracked: false, commandTimeoutMs: 1000, retryMs: 200 });
    const port = new IoredisLockPort(client, lean);
    await waitFor("the lean connection open", async () => (await leanClients()).length === 1);
    const [first] = await leanClients();
    await admin.call("CLIENT", "KILL", "ID", first!.id);
    await admin.set("lock:killed", "owner-2", "PX", 60_000);
    const [sample] = await port.sample([Buffer.from("lock:killed")], ["string"], 256);
    expect(sample!.string?.prefix.toString()).toBe("owner-2");
    await waitFor("a new lean connection, used", async () => {
      await port.sample([Buffer.from("lock:killed")], ["string"], 256);
      const [now] = await leanClients();
      return now !== undefined && now.id !== first!.id && now.cmd === "getrange";
    });
    client.disconnect();
    await waitFor("closed with its reader", async () => (await leanClients()).length === 0);
  });

  it("is never opened for TLS: the reads stay on ioredis", () => {
    const client = connectRedis({ url: "rediss://127.0.0.1:1", commandTimeoutMs: 1000, onStatus: () => undefined });
    expect(leanAddressOf(client)).toBeNull();
    client.disconnect();
  });
});

describe("a server that accepts and never answers", () => {
  let silent: Server;
  let port = 0;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    silent = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    port = (silent.address() as { port: number }).port;
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  it("fails its open and a batch within the timeout, says why once, and ends", async () => {
    const lost: string[] = [];
    const address = { host: "127.0.0.1", port, db: 0 };
    const conn = new LeanConnection(address, {
      name: "t",
      connectTimeoutMs: 1000,
      commandTimeoutMs: 300,
      onLost: (r) => lost.push(r),
    });
    const started = Date.now();
    await expect(conn.open()).rejects.toThrow(/no reply within 300 ms/);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(lost).toEqual(["no reply within 300 ms"]);
    expect(conn.usable).toBe(false);
    await expect(conn.exec([["PTTL", "k"]])).rejects.toThrow(/no reply within 300 ms/);
    expect(lost).toHaveLength(1);
  });

  it("as a reader's lean connection: one log line, and the reads go through the reader", async () => {
    await admin.set("lock:silent", "owner-1", "PX", 60_000);
    const client = connectRedis({ url: redis.url, commandTimeoutMs: 300, onStatus: () => undefined });
    clients.push(client);
    await client.connect();
    const log: string[] = [];
    const lean = new LeanCompanion(
      client,
      { tracked: false, commandTimeoutMs: 300, retryMs: 0, log: (l) => log.push(l) },
      { host: "127.0.0.1", port, db: 0 },
    );
    const reads = new IoredisLockPort(client, lean);
    await waitFor("the first open to fail", () => log.length > 0);
    for (let i = 0; i < 3; i++) {
      const [sample] = await reads.sample([Buffer.from("lock:silent")], ["string"], 256);
      expect(sample!.string?.prefix.toString()).toBe("owner-1");
    }
    // Each read tries it again (no retry delay here; one open at a time), and it fails the same way: said once. A
    // fourth connection means the second open had failed.
    const before = sockets.length;
    await waitFor("two more opens tried", async () => {
      await reads.sample([Buffer.from("lock:silent")], ["string"], 256);
      return sockets.length >= before + 2;
    });
    expect(log).toEqual([
      `bulk-read connection to 127.0.0.1:${port} not opened (no reply within 300 ms); the reads go through the main connection`,
    ]);
    lean.close();
  });
});
