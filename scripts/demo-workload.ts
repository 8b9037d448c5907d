/**
 * A small workload for the quick start: real client code taking and releasing locks in the demo redis-server, so a
 * newcomer sees a live screen. It shows the ordinary case and a few hazards operators should recognise.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { Mutex, Semaphore } from "redis-semaphore";
import { loadLua } from "../agent/sources/redis/lua-scripts";

const url = (process.env.REDIS_URLS ?? "redis://127.0.0.1:6379").split(",")[0]!.trim();
const redis = new Redis(url, { maxRetriesPerRequest: 1 });
const release = loadLua("compare-and-delete");
redis.defineCommand("releaseLock", release);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rand = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

/** Textbook lock: SET NX PX, work, compare-and-delete release. */
async function textbookWorker(resource: string): Promise<never> {
  for (;;) {
    const token = randomBytes(16).toString("hex");
    const ok = await redis.set(resource, token, "PX", 15_000, "NX");
    if (ok) {
      await sleep(rand(2000, 9000));
      await (redis as unknown as { releaseLock(k: string, t: string): Promise<number> }).releaseLock(resource, token);
    }
    await sleep(rand(500, 3000));
  }
}

/** redis-semaphore's Mutex (refreshes its lease while held). */
async function mutexWorker(name: string): Promise<never> {
  for (;;) {
    const mutex = new Mutex(redis, name, { lockTimeout: 8000, refreshInterval: 3000 });
    await mutex.acquire();
    await sleep(rand(4000, 12_000));
    await mutex.release();
    await sleep(rand(1000, 4000));
  }
}

/** redis-semaphore's Semaphore: up to 3 workers at a time share a pool of connections. */
async function semaphoreWorker(name: string): Promise<never> {
  for (;;) {
    const sem = new Semaphore(redis, name, 3, { lockTimeout: 10_000, refreshInterval: 4000, acquireTimeout: 60_000 });
    await sem.acquire();
    await sleep(rand(3000, 9000));
    await sem.release();
    await sleep(rand(500, 2000));
  }
}

/**
 * A Redisson fair lock, written in Redisson's own layout (the lock hash `<clientUUID>:<threadId>` -> re-entry count,
 * the FIFO queue and the waiters' deadlines), held by a JVM "worker" while two threads queue behind it.
 */
async function redissonFairLock(name: string): Promise<never> {
  const client = randomUUID();
  const otherJvm = `${randomUUID()}:12`;
  for (;;) {
    const now = Date.now();
    await redis
      .multi()
      .hset(name, `${client}:57`, "1")
      .pexpire(name, 30_000)
      .del(`redisson_lock_queue:{${name}}`, `redisson_lock_timeout:{${name}}`)
      .rpush(`redisson_lock_queue:{${name}}`, `${client}:61`, otherJvm)
      .zadd(`redisson_lock_timeout:{${name}}`, now + 35_000, `${client}:61`, now + 40_000, otherJvm)
      .exec();
    await sleep(rand(8000, 15_000));
    await redis.del(name, `redisson_lock_queue:{${name}}`, `redisson_lock_timeout:{${name}}`);
    await sleep(rand(2000, 5000));
  }
}

/** A holder slower than its lease: the lock expires and another client takes it while the first still works. */
async function slowHolder(resource: string): Promise<never> {
  for (;;) {
    await redis.set(resource, `worker-a:${randomUUID()}`, "PX", 3000, "NX");
    await sleep(3500);
    await redis.set(resource, `worker-b:${randomUUID()}`, "PX", 6000, "NX");
    await sleep(9000);
  }
}

async function main(): Promise<void> {
  // The SETNX-then-EXPIRE crash: a lock that will never expire.
  await redis.set("lock:legacy:nightly-report", "1", "NX");
  void textbookWorker("lock:orders:checkout");
  void textbookWorker("lock:payments:settle");
  void textbookWorker("lock:inventory:sku-4711");
  void mutexWorker("email-digest");
  void slowHolder("lock:billing:invoice-run");
  void semaphoreWorker("db-connection-pool");
  void semaphoreWorker("db-connection-pool");
  void redissonFairLock("shipping:label-printer");
  process.stdout.write(`demo workload running against ${url}\n`);
}

process.on("SIGTERM", () => {
  redis.disconnect();
  process.exit(0);
});
void main();
