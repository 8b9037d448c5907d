import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subscriberOf } from "../../lib/server/fanout";
import { waitFor } from "../harness/ports";
import { startRedis, type RedisServer } from "../harness/redis";

// The fanout's subscriber connection on a real redis-server, subscribed in the window that lost a dashboard its
// request channel (lib/server/fanout.ts, subscriberOf): after the TCP connect, before ioredis's "ready".

let redis: RedisServer;
let admin: Redis;

beforeAll(async () => {
  redis = await startRedis();
  admin = redis.client();
});

afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
});

async function subscribers(channels: string[]): Promise<number[]> {
  const flat = (await admin.pubsub("NUMSUB", ...channels)) as Array<string | number>;
  return channels.map((_, i) => Number(flat[2 * i + 1]));
}

describe("the fanout's subscriber connection", () => {
  it("keeps every subscription made between connect and ready, with no error", async () => {
    for (let round = 0; round < 5; round++) {
      const pub = new Redis(redis.url, { lazyConnect: false, maxRetriesPerRequest: null });
      const sub = subscriberOf(pub);
      const errors: string[] = [];
      sub.on("error", (err: Error) => errors.push(err.message));
      const channels = [`r${round}-request#/#`, `r${round}-response#/#`, `r${round}-request#/ui#`];
      // As the adapters of several namespaces do, one after another, the moment the socket is connected.
      sub.once("connect", () => {
        void sub.psubscribe(`r${round}#/#*`).catch((e: Error) => errors.push(e.message));
        for (const c of channels) void sub.subscribe(c).catch((e: Error) => errors.push(e.message));
      });
      try {
        await waitFor("every channel subscribed", async () => (await subscribers(channels)).every((n) => n === 1), {
          timeoutMs: 5000,
          intervalMs: 20,
        });
        expect(errors).toEqual([]);
        // And it delivers.
        const got = new Promise<string>((resolve) => sub.once("message", (_c: string, m: string) => resolve(m)));
        await admin.publish(channels[0]!, "hello");
        expect(await got).toBe("hello");
      } finally {
        sub.disconnect();
        pub.disconnect();
      }
    }
  });
});
