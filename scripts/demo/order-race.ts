/**
 * The seeds' "grab an order" race (seed 003): drivers race for each new order, and only the one holding the order's
 * lock may take it. Three lock styles side by side: a textbook SET NX PX lock with the compare-and-delete release,
 * a Redisson RLock (Redisson's own Lua, watchdog renewal) and a node-redlock lock on the Redlock group. One driver
 * is slow: now and then it works longer than its textbook lease, another driver grabs the order meanwhile, and the
 * takeover hazard appears.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { Redis } from "ioredis";
import type Redlock from "redlock";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rand = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));
/** The application's own safe release, as the textbook (and the seeds) write it: delete only our own token. */
const compareAndDelete = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`;
const DRIVERS = ["driver-1", "driver-2", "driver-3", "driver-4", "driver-5"];
const SLOW_DRIVER = "driver-4";

/** Redisson's scripts as Redisson sends them (the captured copies the tests also run). */
const redissonLua = (name: string) =>
  readFileSync(path.join(import.meta.dirname, "..", "..", "tests", "fixtures", "redisson", name), "utf8");

type Grab = (driver: string) => Promise<(() => Promise<boolean>) | null>;

/** A textbook lock: the driver's name plus a random token, SET NX PX, released only by compare-and-delete. */
function textbook(redis: Redis, key: string, leaseMs: number): Grab {
  return async (driver) => {
    const token = `${driver}:${randomBytes(8).toString("hex")}`;
    if ((await redis.set(key, token, "PX", leaseMs, "NX")) !== "OK") return null;
    return async () => (await redis.eval(compareAndDelete, 1, key, token)) === 1;
  };
}

/** A Redisson RLock: hash field `<clientUUID>:<threadId>`, a 30 s lease the watchdog renews every 10 s. */
function redisson(redis: Redis, key: string): Grab {
  const lock = redissonLua("lock-1.lua");
  const renew = redissonLua("renew-1.lua");
  const unlock = redissonLua("unlock-2.lua");
  const clients = new Map(DRIVERS.map((d) => [d, randomUUID()]));
  return async (driver) => {
    const field = `${clients.get(driver)}:${rand(40, 90)}`;
    if ((await redis.eval(lock, 1, key, 30_000, field)) !== null) return null;
    const watchdog = setInterval(() => void redis.eval(renew, 1, key, 30_000, field).catch(() => undefined), 10_000);
    return async () => {
      clearInterval(watchdog);
      return (await redis.eval(unlock, 2, key, `redisson_lock__channel:{${key}}`, 0, 30_000, field)) === 1;
    };
  };
}

/** node-redlock on the demo's Redlock group. */
function redlockGrab(redlock: Redlock, key: string, leaseMs: number): Grab {
  return async () => {
    try {
      const lock = await redlock.acquire([key], leaseMs, { retryCount: 0 });
      return async () => {
        await lock.release().catch(() => undefined);
        return true;
      };
    } catch {
      return null;
    }
  };
}

/** One order board: every few seconds a new order, all drivers try at once, the winner holds while accepting it. */
async function board(grab: Grab, work: (driver: string) => number, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    const racers = [...DRIVERS].sort(() => Math.random() - 0.5).slice(0, 3);
    const won = await Promise.all(racers.map(async (d) => ({ d, release: await grab(d).catch(() => null) })));
    const winner = won.find((w) => w.release !== null);
    if (winner) {
      await sleep(work(winner.d));
      await winner.release!().catch(() => false);
    }
    await sleep(rand(1500, 4000));
  }
}

export function startOrderRace(redis: Redis, redlock: Redlock | null): { stop(): void } {
  let stopped = false;
  const isStopped = () => stopped;
  const order = "orders:grab-lock:1042";
  void board(textbook(redis, order, 4000), () => rand(1500, 3000), isStopped);
  // Another racer keeps trying the same order every half second, as impatient drivers do.
  void (async () => {
    const grab = textbook(redis, order, 4000);
    while (!stopped) {
      const release = await grab(DRIVERS[rand(0, DRIVERS.length)]!).catch(() => null);
      if (release) {
        await sleep(rand(1500, 3000));
        await release().catch(() => false);
      }
      await sleep(500);
    }
  })();
  // Every 20 s the slow driver gets an order and works 7 s on a 4 s lease: the lock expires under it and another
  // driver takes the order while it still works (the takeover hazard); its release then finds another token.
  void (async () => {
    const grab = textbook(redis, order, 4000);
    while (!stopped) {
      await sleep(20_000);
      let release: (() => Promise<boolean>) | null = null;
      while (!stopped && !release) {
        release = await grab(SLOW_DRIVER).catch(() => null);
        if (!release) await sleep(100);
      }
      if (!release) break;
      await sleep(7000);
      await release().catch(() => false);
    }
  })();
  void board(redisson(redis, "orders:grab-lock:1043"), () => rand(2000, 6000), isStopped);
  if (redlock) void board(redlockGrab(redlock, "orders:grab-lock:1044", 6000), () => rand(1500, 4000), isStopped);
  return {
    stop() {
      stopped = true;
    },
  };
}
