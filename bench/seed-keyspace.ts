/**
 * The keyspace every Redis measurement runs on: DEBUG POPULATE filler plus 10,000 locks written the way real
 * client libraries write them (see ../shared/reference/lock-formats.md), so discovery, recognition and sampling
 * cost what they cost in production, not what a uniform `lock:N` string costs.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Redis } from "ioredis";

/**
 * BENCH_REDIS_SCALE: 1 (default) is 1,000,000 keys with 10,000 locks; 10 is issue 11's second size, 10,000,000 keys
 * with 100,000 locks (every format ten times as many).
 */
export const REDIS_SCALE = readScale(process.env.BENCH_REDIS_SCALE);

function readScale(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 20)
    throw new Error(`BENCH_REDIS_SCALE: expected an integer 1 to 20, got "${raw}"`);
  return n;
}

/**
 * Leases long enough that no seeded lock expires during a bench run (about five minutes at scale 1; at 10 the paced
 * discovery alone takes about half an hour).
 */
const LEASE_MS = REDIS_SCALE > 1 ? 3 * 3_600_000 : 20 * 60_000;

type Pipeline = ReturnType<Redis["pipeline"]>;

/** redis-py's default token: uuid1().hex, 32 hex with the version nibble "1" at index 12. */
function uuid1Hex(): string {
  const hex = randomBytes(16).toString("hex");
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 12)}1${hex.slice(13, 16)}${variant}${hex.slice(17)}`;
}

export interface LockFormat {
  name: string;
  count: number;
  /** Whether the lock has a TTL (the broken textbook lock and redis-py's default have none). */
  ttl: boolean;
  /** Queues the commands that create lock number i. */
  write: (p: Pipeline, i: number) => void;
}

/** The mix, 10,000 in all (times REDIS_SCALE); 1,500 without a TTL. */
export const LOCK_MIX: readonly LockFormat[] = [
  {
    name: "textbook SET NX PX, random token",
    count: 2000,
    ttl: true,
    write: (p, i) => p.set(`lock:order:${i}`, randomBytes(12).toString("base64url"), "PX", LEASE_MS, "NX"),
  },
  {
    name: "textbook SETNX without EXPIRE, value 1",
    count: 500,
    ttl: false,
    write: (p, i) => p.setnx(`lock:legacy-cron:${i}`, "1"),
  },
  {
    name: "node-redlock, 32 hex",
    count: 1500,
    ttl: true,
    write: (p, i) => p.set(`locks:account:${i}`, randomBytes(16).toString("hex"), "PX", LEASE_MS),
  },
  {
    name: "redis-semaphore mutex:, UUIDv4",
    count: 1500,
    ttl: true,
    write: (p, i) => p.set(`mutex:invoice:${i}`, randomUUID(), "PX", LEASE_MS, "NX"),
  },
  {
    name: "redis-semaphore semaphore:, zset of 1-3 UUIDv4",
    count: 1000,
    ttl: true,
    write: (p, i) => {
      const key = `semaphore:pool:${i}`;
      const now = Date.now();
      for (let m = 0; m <= i % 3; m++) p.zadd(key, now - m * 100, randomUUID());
      p.pexpire(key, LEASE_MS);
    },
  },
  {
    name: "Redisson RLock, hash <uuid>:<tid> -> count, PEXPIRE",
    count: 1500,
    ttl: true,
    write: (p, i) => {
      const key = `orderLock:${i}`;
      p.hset(key, `${randomUUID()}:${40 + (i % 200)}`, String(1 + (i % 3)));
      p.pexpire(key, LEASE_MS);
    },
  },
  {
    name: "ShedLock job-lock:default:<name>",
    count: 1000,
    ttl: true,
    write: (p, i) =>
      p.set(
        `job-lock:default:report-job-${i}`,
        `ADDED:${new Date().toISOString()}@worker-${i % 17}:${randomUUID()}`,
        "PX",
        LEASE_MS,
      ),
  },
  {
    name: "redis-py, UUIDv1 hex, no TTL",
    count: 1000,
    ttl: false,
    write: (p, i) => p.set(`pylock:ingest:${i}`, uuid1Hex(), "NX"),
  },
];

export const TOTAL_LOCKS = LOCK_MIX.reduce((n, f) => n + f.count, 0) * REDIS_SCALE;

export interface SeedSummary {
  dbsize: number;
  filler: number;
  locks: number;
  withoutTtl: number;
  populateMs: number;
  locksMs: number;
}

/** Fills an empty server: `DEBUG POPULATE` for the filler (keys `key:<n>`, matched by no lock pattern), then the locks. */
export async function seedKeyspace(client: Redis, totalKeys: number): Promise<SeedSummary> {
  if ((await client.dbsize()) !== 0) throw new Error("seedKeyspace expects an empty server");
  const filler = totalKeys - TOTAL_LOCKS;
  if (!Number.isInteger(filler) || filler < 0)
    throw new Error(`seedKeyspace: ${totalKeys} keys cannot hold the ${TOTAL_LOCKS} locks of the mix`);
  let t = performance.now();
  await client.call("DEBUG", "POPULATE", String(filler), "key", "16");
  const populateMs = performance.now() - t;
  t = performance.now();
  for (const format of LOCK_MIX) {
    const count = format.count * REDIS_SCALE;
    for (let start = 0; start < count; start += 500) {
      const p = client.pipeline();
      for (let i = start; i < Math.min(count, start + 500); i++) format.write(p, i);
      const replies = (await p.exec()) ?? [];
      const failed = replies.find(([err]) => err);
      if (failed) throw new Error(`seeding ${format.name}: ${String(failed[0])}`);
    }
  }
  const locksMs = performance.now() - t;
  const dbsize = await client.dbsize();
  if (dbsize !== totalKeys) throw new Error(`expected ${totalKeys} keys after seeding, found ${dbsize}`);
  return {
    dbsize,
    filler,
    locks: TOTAL_LOCKS,
    withoutTtl: LOCK_MIX.filter((f) => !f.ttl).reduce((n, f) => n + f.count, 0) * REDIS_SCALE,
    populateMs,
    locksMs,
  };
}
