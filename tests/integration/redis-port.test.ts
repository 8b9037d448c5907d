import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { IoredisLockPort, onWire } from "../../agent/sources/redis/redis-client";
import { compilePatterns, supersetGlob } from "../../agent/core/glob";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";
import { startRedis, type RedisServer } from "../harness/redis";

let redis: RedisServer;
let admin: Redis;
let reader: Redis;

beforeAll(async () => {
  redis = await startRedis();
  admin = redis.client();
  reader = redis.client();
});

afterAll(async () => {
  reader?.disconnect();
  admin?.disconnect();
  await redis?.stop();
});

/** Calls per command since the last CONFIG RESETSTAT, from INFO commandstats. */
async function calls(): Promise<Map<string, number>> {
  const info = await admin.info("commandstats");
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([a-z0-9|_-]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

/**
 * Reads `names` with `port` as new keys (types unknown), counting the commands that takes, and checks each sample
 * against a read of the same key by a fresh port told its type: the same sample but for the remaining lease, which
 * counts down between the two reads.
 */
async function readAsNew(port: IoredisLockPort, names: string[], types: string[]) {
  const keys = names.map((n) => Buffer.from(n));
  const known = await new IoredisLockPort(reader).sample(keys, types, 256);
  await admin.config("RESETSTAT");
  const fresh = await port.sample(keys, [], 256);
  const stats = await calls();
  expect(fresh.map((s) => s.type)).toEqual(types);
  for (const [i, s] of fresh.entries()) {
    expect({ ...s, pttl: 0 }, names[i]).toEqual({ ...known[i]!, pttl: 0 });
    expect(Math.abs(s.pttl - known[i]!.pttl), names[i]).toBeLessThan(1000);
  }
  return { fresh, stats };
}

describe("IoredisLockPort.sample on a real server", () => {
  it("reads a short string or a missing new key with PTTL and GETRANGE only; TYPE for the other types", async () => {
    await admin.set("lock:s1", "token-1", "PX", 60_000);
    await admin.set("lock:s2", "x".repeat(300));
    await admin.hset("lock:h", "8d6f:1", "1");
    await admin.pexpire("lock:h", 60_000);
    await admin.zadd("semaphore:z", 1, "a", 2, "b");
    await admin.rpush("lock:l", "w1", "w2");
    await admin.sadd("lock:set", "m1");
    const names = ["lock:s1", "lock:s2", "lock:h", "semaphore:z", "lock:l", "lock:set", "lock:missing"];
    // What the same keys read as when their types are known is the reference.
    const types = ["string", "string", "hash", "zset", "list", "set", "none"];
    const { fresh, stats } = await readAsNew(new IoredisLockPort(reader), names, types);
    expect(fresh[1]!.string).toMatchObject({ length: 300 });
    expect(fresh[2]!.hash?.fields.map(([f, v]) => `${f.toString()}=${v.toString()}`)).toEqual(["8d6f:1=1"]);
    expect(fresh[3]!.zset?.members.map(([m, sc]) => `${m.toString()}:${sc}`)).toEqual(["a:1", "b:2"]);
    // The short string and the missing key: PTTL and GETRANGE, nothing else. The 300-byte string (longer than the
    // 256 read): TYPE, PTTL, STRLEN, GETRANGE again. Each of the 4 other types: TYPE and PTTL, then TYPE, PTTL and
    // its reads. Before: a TYPE for each key in the first pipeline and a second for each other type, 11.
    expect(stats.get("type")).toBe(1 + 4 * 2);
    expect(stats.get("pttl")).toBe(7 + 1 + 4 * 2);
    expect(stats.get("strlen")).toBe(1);
    expect(stats.get("getrange")).toBe(7 + 1);
    expect(stats.get("hscan")).toBe(1);
  });
});

describe("IoredisLockPort.sample: a new key read first as the type of its family's keys", () => {
  it("reads the later keys of a family with PTTL and their bounded read, the same samples as a full read", async () => {
    const now = Date.now();
    const fam = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    // A family of Redisson-style hashes, one of small zsets, one of lists; the last key of each is too big for one
    // page, and each family has one string among its keys (a wrong guess, read the long way).
    const hashes = fam("fam:orderLock:", 6);
    const zsets = fam("fam:semaphore:", 6);
    const lists = fam("fam:queue:", 6);
    for (const [i, k] of hashes.entries()) {
      if (i === 4) await admin.set(k, "a-string-in-a-hash-family", "PX", 60_000);
      else if (i === 5) for (let f = 0; f < 3 * 20; f++) await admin.hset(k, `f${f}`, "x".repeat(80));
      else await admin.hset(k, `8d6f-${i}:1`, String(i));
      await admin.pexpire(k, 60_000);
    }
    for (const [i, k] of zsets.entries()) {
      if (i === 4) await admin.set(k, "s");
      else for (let m = 0; m <= (i === 5 ? 25 : i); m++) await admin.zadd(k, now - m, `m${m}`);
    }
    for (const [i, k] of lists.entries()) {
      if (i === 4) await admin.set(k, "s");
      else await admin.rpush(k, ...fam("w", i === 5 ? 21 : i + 1));
    }
    const port = new IoredisLockPort(reader);
    const teach = [hashes[0]!, zsets[0]!, lists[0]!].map((n) => Buffer.from(n));
    await port.sample(teach, [], 256);

    const names = [...hashes.slice(1), ...zsets.slice(1), ...lists.slice(1), "fam:orderLock:gone"];
    const types = names.map((n, i) =>
      n.endsWith("gone") ? "none" : i % 5 === 3 ? "string" : ["hash", "zset", "list"][Math.floor(i / 5)]!,
    );
    const { fresh, stats } = await readAsNew(port, names, types);
    expect(fresh[4]!.hash?.length).toBe(60);
    expect(fresh[9]!.zset?.length).toBe(26);
    expect(fresh[14]!.list?.length).toBe(21);
    // Every key first: PTTL and the read of its family's type (the key gone: PTTL -2, nothing more). The 3 small ones of each family are then whole; the
    // big one gets TYPE, PTTL, its length and read; the string gets TYPE and PTTL, then TYPE, PTTL, STRLEN, GETRANGE.
    expect(stats.get("pttl")).toBe(16 + 3 + 3 * 2);
    expect(stats.get("type")).toBe(3 + 3 * 2);
    expect(stats.get("hlen")).toBe(1);
    expect(stats.get("zcard")).toBe(1);
    expect(stats.get("llen")).toBe(1);
    expect(stats.get("hscan")).toBe(5 + 1 + 1); // the missing key is of the hash family too
    expect(stats.get("zrange")).toBe(5 + 1);
    expect(stats.get("lrange")).toBe(5 + 1);
    expect(stats.get("getrange")).toBe(3);
    expect(stats.get("strlen")).toBe(3);
  });
});

describe("keys on the wire: ASCII as strings, any other bytes as they are", () => {
  it("sends an ASCII key as a string and a key with other bytes as its Buffer", () => {
    expect(onWire(Buffer.from("lock:a\r\n\0 b", "latin1"))).toBe("lock:a\r\n\0 b");
    const binary = Buffer.from([0x6c, 0x6f, 0x63, 0x6b, 0x3a, 0xff, 0xfe]);
    expect(onWire(binary)).toBe(binary);
    const utf8 = Buffer.from("lock:é", "utf8");
    expect(onWire(utf8)).toBe(utf8);
  });

  it("reads, re-reads and counts keys of both kinds on a real server, each its own", async () => {
    const names = [
      Buffer.from("lock:wire:ascii\r\n", "latin1"),
      Buffer.from([0x6c, 0x6f, 0x63, 0x6b, 0x3a, 0xff, 0x0d, 0x0a]),
      Buffer.from("lock:wire:é", "utf8"),
      // Its latin1 reading is the previous key's UTF-8 bytes read one per byte: a string of it would be another key.
      Buffer.from("lock:wire:é", "latin1"),
    ];
    for (const [i, k] of names.entries()) await admin.set(k, `v${i}`, "PX", 60_000);
    const port = new IoredisLockPort(reader);
    const fresh = await port.sample(names, [], 256);
    expect(fresh.map((s) => s.string?.prefix.toString())).toEqual(["v0", "v1", "v2", "v3"]);
    const again = await port.resample(names, ["string", "string", "string", "string"], 256);
    expect(again.map((s) => s?.string?.prefix.toString())).toEqual(["v0", "v1", "v2", "v3"]);
    await admin.del(names[1]!);
    expect(await port.countExisting([[names[0]!], [names[1]!], [names[2]!, names[3]!]])).toEqual([1, 0, 2]);
  });
});

describe("IoredisLockPort.scan with the superset glob as MATCH on a real server", () => {
  it("returns every key a lock pattern matches, hostile bytes included, and leaves most other keys out", async () => {
    await admin.flushall();
    const names = [
      "lock:a",
      "ParentLock",
      "app:MUTEX:1",
      "semaphore:pool",
      "blocks",
      "x]lock",
      "\\lock\\",
      "^-LOCK-^",
      "lock\x00\xff",
      "\xe9lock",
      "key:1",
      "abc:9",
      "\x00zz",
    ];
    // Patterns as the source passes them: latin1, one character per byte; two with bytes glob syntax uses.
    const patterns = [...DEFAULT_LOCK_PATTERNS, "x\\]*", "*[\\^]-*"];
    const keys = names.map((n) => Buffer.from(n, "latin1"));
    for (const k of [...keys, Buffer.from("x]only", "latin1"), Buffer.from("a^-b", "latin1")]) await admin.set(k, "v");
    const match = compilePatterns(patterns);
    const glob = Buffer.from(supersetGlob(patterns)!, "latin1");
    const port = new IoredisLockPort(reader);
    const seen = new Set<string>();
    let cursor = "0";
    do {
      const step = await port.scan(cursor, 10, glob);
      cursor = step.cursor;
      for (const k of step.keys) seen.add(k.toString("latin1"));
    } while (cursor !== "0");
    const all = [...names, "x]only", "a^-b"];
    const wanted = all.filter((n) => match(n));
    expect(wanted.length).toBeGreaterThan(10);
    for (const n of wanted) expect(seen.has(n), JSON.stringify(n)).toBe(true);
    // The glob is "*" + one class per aligned byte (here 2: the shortest run): it leaves out what has no such pair.
    for (const n of ["key:1", "abc:9", "\x00zz"]) expect(seen.has(n), JSON.stringify(n)).toBe(false);
  });
});
