/**
 * A small workload for the quick start: real client code taking and releasing locks in the demo redis-server, so a
 * newcomer sees a live screen. It shows the ordinary case and a few hazards operators should recognise.
 *
 * It stops cleanly: on SIGTERM/SIGINT, when the process named by LOCKSCOPE_STOP_WITH_PID (the quick start) is gone,
 * and when its redis-server is gone for good. A connection error is one line, never an ioredis stack trace.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { Mutex, Semaphore } from "redis-semaphore";

const url = (process.env.REDIS_URLS ?? "redis://127.0.0.1:6379").split(",")[0]!.trim();
let stopping = false;
const redis = new Redis(url, {
  maxRetriesPerRequest: 1,
  // The demo server lives exactly as long as the quick start: after a few failed reconnects it is gone for good.
  retryStrategy: (times) => (stopping || times > 10 ? null : Math.min(times * 200, 1000)),
});
let lastError = "";
redis.on("error", (err: Error) => {
  // Without a listener ioredis prints every failed reconnect as an "Unhandled error event" stack trace.
  if (stopping || err.message === lastError) return;
  lastError = err.message;
  process.stderr.write(`demo workload: redis ${url}: ${err.message}\n`);
});
redis.on("end", () => stop(stopping ? 0 : 1, stopping ? undefined : "redis connection closed for good"));
// The release every lock tutorial shows (the client's own, not the agent's fingerprint-guarded script).
redis.defineCommand("releaseLock", {
  numberOfKeys: 1,
  lua: 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end',
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
const rand = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

/** Textbook lock: SET NX PX, work, compare-and-delete release. */
async function textbookWorker(resource: string): Promise<void> {
  while (!stopping) {
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
async function mutexWorker(name: string): Promise<void> {
  while (!stopping) {
    const mutex = new Mutex(redis, name, { lockTimeout: 8000, refreshInterval: 3000 });
    await mutex.acquire();
    await sleep(rand(4000, 12_000));
    await mutex.release();
    await sleep(rand(1000, 4000));
  }
}

/** redis-semaphore's Semaphore: up to 3 workers at a time share a pool of connections. */
async function semaphoreWorker(name: string): Promise<void> {
  while (!stopping) {
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
async function redissonFairLock(name: string): Promise<void> {
  const client = randomUUID();
  const otherJvm = `${randomUUID()}:12`;
  while (!stopping) {
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
async function slowHolder(resource: string): Promise<void> {
  while (!stopping) {
    await redis.set(resource, `worker-a:${randomUUID()}`, "PX", 3000, "NX");
    await sleep(3500);
    await redis.set(resource, `worker-b:${randomUUID()}`, "PX", 6000, "NX");
    await sleep(9000);
  }
}

/**
 * Runs one worker until the workload stops; a failed step (the server restarting, a lease lost) is retried after a
 * pause instead of ending the process with an unhandled rejection (MaxRetriesPerRequestError).
 */
async function keep(name: string, worker: () => Promise<void>): Promise<void> {
  while (!stopping) {
    try {
      await worker();
    } catch (err) {
      if (stopping) return;
      const message = err instanceof Error ? err.message : String(err);
      if (message !== lastError) process.stderr.write(`demo workload: ${name}: ${message}; retrying\n`);
      lastError = message;
      await sleep(1000);
    }
  }
}

function stop(code: number, why?: string): void {
  if (why) process.stderr.write(`demo workload: ${why}; stopping\n`);
  stopping = true;
  redis.disconnect();
  process.exit(code);
}

async function main(): Promise<void> {
  // The SETNX-then-EXPIRE crash: a lock that will never expire.
  try {
    await redis.set("lock:legacy:nightly-report", "1", "NX");
  } catch (err) {
    process.stderr.write(`demo workload: legacy lock: ${err instanceof Error ? err.message : String(err)}\n`);
  }
  void keep("checkout", () => textbookWorker("lock:orders:checkout"));
  void keep("settle", () => textbookWorker("lock:payments:settle"));
  void keep("sku-4711", () => textbookWorker("lock:inventory:sku-4711"));
  void keep("email-digest", () => mutexWorker("email-digest"));
  void keep("invoice-run", () => slowHolder("lock:billing:invoice-run"));
  void keep("pool-1", () => semaphoreWorker("db-connection-pool"));
  void keep("pool-2", () => semaphoreWorker("db-connection-pool"));
  void keep("label-printer", () => redissonFairLock("shipping:label-printer"));
  process.stdout.write(`demo workload running against ${url}\n`);
}

process.on("SIGTERM", () => stop(0));
process.on("SIGINT", () => stop(0));
// The quick start names itself here: when it is gone (even killed outright), so is the demo.
const parent = Number(process.env.LOCKSCOPE_STOP_WITH_PID ?? "");
if (Number.isInteger(parent) && parent > 0) {
  setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch {
      stop(0, `process ${parent} (the quick start) is gone`);
    }
  }, 500).unref();
}
void main();
