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
    const keys = names.map((n) => Buffer.from(n));
    const port = new IoredisLockPort(reader);

    // What the same keys read as when their types are known: the reference.
    const types = ["string", "string", "hash", "zset", "list", "set", "none"];
    const known = await port.sample(keys, types, 256);
    await admin.config("RESETSTAT");
    const fresh = await port.sample(keys, [], 256);
    const stats = await calls();

    expect(fresh.map((s) => s.type)).toEqual(types);
    for (const [i, s] of fresh.entries()) {
      // Same sample but for the remaining lease, which counts down between the two reads.
      expect({ ...s, pttl: 0 }, names[i]).toEqual({ ...known[i]!, pttl: 0 });
      expect(Math.abs(s.pttl - known[i]!.pttl), names[i]).toBeLessThan(1000);
    }
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
