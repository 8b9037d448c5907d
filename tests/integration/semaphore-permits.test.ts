import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Semaphore } from "redis-semaphore";
import type { LockEvent } from "../../lib/contract/lock";
import type { RedisSources } from "../../agent/sources/redis/redis-sources";
import { inProcessRedisSources } from "../harness/in-process-sources";
import { startRedis, type RedisServer } from "../harness/redis";

let redis: RedisServer;
let sources: RedisSources;
const events: LockEvent[] = [];
const poll = async () => {
  events.push(...(await sources.sources[0]!.poll()).events);
};
const KEY = "semaphore:lock-pool";
const seen = () => events.filter((e) => e.resource === KEY).map((e) => [e.type, e.owner]);

beforeAll(async () => {
  redis = await startRedis();
  sources = inProcessRedisSources(redis.url, "it-semaphore");
  await sources.ready;
});

afterAll(async () => {
  sources?.close();
  await redis?.stop();
});

describe("a real redis-semaphore Semaphore with 2 permits", () => {
  it("reports each permit's acquire and release, and no takeover when permits rotate", async () => {
    const c = redis.client();
    const permit = () => new Semaphore(c, "lock-pool", 2, { lockTimeout: 10_000, refreshInterval: 0 });
    const [a, b, d] = [permit(), permit(), permit()];
    await a.acquire();
    await b.acquire();
    await poll();
    expect(seen()).toEqual([
      ["acquired", a.identifier],
      ["acquired", b.identifier],
    ]);
    const lock = sources.sources[0]!.locks().find((l) => l.resource === KEY)!;
    expect(lock.holders?.map((h) => h.owner).sort()).toEqual([a.identifier, b.identifier].sort());
    expect(lock.holders?.every((h) => typeof h.ttlMs === "number" && h.ttlMs > 5_000)).toBe(true);

    // a rotation: the oldest permit (the lock's `owner`) goes back, another client takes the free one
    await a.release();
    await d.acquire();
    await poll();
    expect(seen().slice(2)).toEqual([
      ["released", a.identifier],
      ["acquired", d.identifier],
    ]);
    expect(events.some((e) => e.type === "owner-changed")).toBe(false);

    await b.release();
    await d.release();
    await poll();
    expect(seen().slice(4).sort()).toEqual(
      [
        ["released", b.identifier],
        ["released", d.identifier],
      ].sort(),
    );
  });
});
