import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { startRedis, type RedisServer } from "../harness/redis";
import { bothSee as bothAgentsSee, startInProcessAgent, type InProcessAgent } from "../harness/in-process-agent";
import { waitFor } from "../harness/ports";

/** The textbook release an application runs (the agent's own compare-and-delete guards a fingerprint instead). */
const APP_RELEASE = {
  numberOfKeys: 1,
  lua: 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end',
};

/**
 * Change detection by server-assisted client tracking against a real redis-server, side by side with polling:
 * both agents watch the same server, and every change must produce the same events in both.
 */
let redis: RedisServer;
let track: InProcessAgent;
let poll: InProcessAgent;
let c: Redis;
const prefix = `trk-${Date.now()}`;

beforeAll(async () => {
  redis = await startRedis();
  c = redis.client();
  track = await startInProcessAgent(redis.url, { changeDetection: "track" });
  poll = await startInProcessAgent(redis.url, { changeDetection: "poll" });
});

afterAll(async () => {
  track?.stop();
  poll?.stop();
  await redis?.stop();
});

const bothSee = (resource: string, want: string[], timeoutMs = 10_000) =>
  bothAgentsSee(track, poll, resource, want, timeoutMs);

/** CLIENT IDs of the agents' invalidation connections, in CLIENT LIST's order. */
async function invalidationIds(): Promise<string[]> {
  const list = String(await c.call("CLIENT", "LIST"));
  return [...list.matchAll(/id=(\d+) [^\n]*name=lockscope-agent-invalidations/g)].map((m) => m[1]!);
}

function detection(agent: InProcessAgent) {
  return agent.loop.statuses()[0]!;
}

describe("client tracking against a real redis-server, compared with polling", () => {
  it("runs in track mode and says so in its status", async () => {
    await waitFor("track mode live", () => detection(track).changeDetection === "track");
    expect(detection(poll).changeDetection).toBe("poll");
    const info = (await c.call("CLIENT", "LIST")) as string;
    expect(info).toMatch(/name=lockscope-agent-invalidations .*cmd=subscribe/);
  });

  it("renewal, owner change, compare-and-delete release and expiry give the same events in both modes", async () => {
    c.defineCommand("releaseLock", APP_RELEASE);
    const release = (k: string, t: string) =>
      (c as unknown as { releaseLock(k: string, t: string): Promise<number> }).releaseLock(k, t);
    const key = `${prefix}:lock:orders`;
    await c.set(key, "token-A", "PX", 10_000, "NX");
    await bothSee(key, ["acquired"]);
    await c.pexpire(key, 60_000);
    await bothSee(key, ["acquired", "renewed"]);
    await c.set(key, "token-B", "PX", 60_000, "XX");
    await bothSee(key, ["acquired", "renewed", "owner-changed"]);
    expect(await release(key, "token-A")).toBe(0);
    expect(await release(key, "token-B")).toBe(1);
    await bothSee(key, ["acquired", "renewed", "owner-changed", "released"]);
    const short = `${prefix}:lock:short`;
    await c.set(short, "token-C", "PX", 700, "NX");
    await bothSee(short, ["acquired", "expired"]);
    // In track mode the changes of a known lock came from the server's invalidations, not from re-reading it.
    const tracked = track.events.filter((e) => e.resource === key && e.type !== "acquired");
    expect(tracked.map((e) => e.detail?.observedBy)).toEqual(["notification", "notification", "notification"]);
  });

  it("a Redisson fair lock whose name matches no pattern is seen again when taken after a release, in both modes", async () => {
    // As the demo's shipping:label-printer: only its queue's and timeout set's names match the default `*lock*`.
    const name = `${prefix}:shipping:printer`;
    const take = (holder: string) =>
      c
        .multi()
        .hset(name, `${holder}:57`, "1")
        .pexpire(name, 30_000)
        .rpush(`redisson_lock_queue:{${name}}`, `${holder}:61`)
        .zadd(`redisson_lock_timeout:{${name}}`, Date.now() + 35_000, `${holder}:61`)
        .exec();
    await take("3f2504e0-4f89-41d3-9a0c-0305e82c3301");
    await bothSee(name, ["acquired"]);
    await c.del(name, `redisson_lock_queue:{${name}}`, `redisson_lock_timeout:{${name}}`);
    await bothSee(name, ["acquired", "released"]);
    await take("6ba7b810-9dad-41d1-80b4-00c04fd430c8");
    await bothSee(name, ["acquired", "released", "acquired"]);
    // In track mode the server's invalidation of the lock's name brought it back, not a later SCAN pass.
    expect(track.events.filter((e) => e.resource === name).at(-1)!.detail?.observedBy).toBe("notification");
  });

  it("sees an expiry at the lease end even when the server's active expiry never deletes the key", async () => {
    await c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0");
    try {
      const key = `${prefix}:lock:lazy-expiry`;
      await c.set(key, "token-D", "PX", 800, "NX");
      const setAt = Date.now();
      await bothSee(key, ["acquired"]);
      await waitFor("expired in track mode", () => track.types(key).includes("expired"), { timeoutMs: 5000 });
      const ev = track.events.find((e) => e.resource === key && e.type === "expired")!;
      // The agent's own lease-end re-read, or an invalidation when the poll-mode agent's read makes the server delete
      // the expired key lazily (both agents watch this server): either way at the lease end, not whenever the server
      // gets round to deleting it (never, with active expiry off). The speed target is measured by the bench.
      expect(["lease-end", "notification"]).toContain(ev.detail?.observedBy);
      expect(Date.parse(ev.at) - (setAt + 800)).toBeLessThan(1000);
      await bothSee(key, ["acquired", "expired"]);
    } finally {
      await c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1");
    }
  });

  it("re-enables tracking after its invalidation connection is killed, and misses nothing meanwhile", async () => {
    const key = `${prefix}:lock:killed-redirect`;
    await c.set(key, "owner-1", "PX", 60_000);
    await bothSee(key, ["acquired"]);
    const [id] = await invalidationIds();
    await c.call("CLIENT", "KILL", "ID", id!);
    await c.set(key, "owner-2", "PX", 60_000);
    await bothSee(key, ["acquired", "owner-changed"]);
    await waitFor("a new invalidation connection", async () => {
      const [now] = await invalidationIds();
      return now !== undefined && now !== id && detection(track).changeDetection === "track";
    });
    // Tracking works again: a change is announced, not found by a poll.
    await c.set(key, "owner-3", "PX", 60_000);
    await bothSee(key, ["acquired", "owner-changed", "owner-changed"]);
    const last = track.events.filter((e) => e.resource === key).at(-1)!;
    expect(last.detail?.observedBy).toBe("notification");
  });

  it("tracks the bulk reads on their lean connection too, and re-enables tracking when that connection is killed", async () => {
    // Each agent reads lock keys in bulk on a connection of its own (lean-connection.ts): the tracking agent's is
    // tracked with the same redirect as its reader, the polling agent's is not.
    const lean = async () =>
      [
        ...String(await c.call("CLIENT", "LIST")).matchAll(
          /id=(\d+) [^\n]*name=lockscope-agent-reads [^\n]*cmd=(\S+) [^\n]*redir=(-?\d+)/g,
        ),
      ].map((m) => ({ id: m[1]!, cmd: m[2]!, redir: m[3]! }));
    await waitFor("both agents' lean connections", async () => (await lean()).length === 2);
    const [invalidations] = await invalidationIds();
    expect((await lean()).map((l) => l.redir).sort()).toEqual(["-1", invalidations!].sort());
    const key = `${prefix}:lock:killed-lean`;
    await c.set(key, "owner-1", "PX", 60_000);
    await bothSee(key, ["acquired"]);
    const tracked = (await lean()).find((l) => l.redir !== "-1")!;
    await c.call("CLIENT", "KILL", "ID", tracked.id);
    await c.set(key, "owner-2", "PX", 60_000);
    await bothSee(key, ["acquired", "owner-changed"]);
    // Live again, and the re-read of every known key that follows has gone through the new connection (its last
    // command is no longer its CLIENT TRACKING): until then a change is found by that re-read, not announced.
    await waitFor(
      "a new tracked lean connection, used",
      async () => {
        const now = (await lean()).find((l) => l.redir !== "-1");
        return (
          now !== undefined &&
          now.id !== tracked.id &&
          now.cmd !== "client|tracking" &&
          detection(track).changeDetection === "track"
        );
      },
      { state: () => `${JSON.stringify(detection(track))} ${track.log.join(" | ")}` },
    );
    expect(track.log.some((l) => /bulk-read connection was lost/.test(l))).toBe(true);
    // Tracking covers the keys read since: a change is announced, not found by a poll.
    await c.set(key, "owner-3", "PX", 60_000);
    await bothSee(key, ["acquired", "owner-changed", "owner-changed"]);
    const last = track.events.filter((e) => e.resource === key).at(-1)!;
    expect(last.detail?.observedBy).toBe("notification");
  });

  it("announces new keys under a BCAST prefix again after its invalidation connection is killed", async () => {
    // Its own agent: a pattern with a literal prefix (BCAST), and polls a minute apart so that no SCAN finds the
    // new keys first: each must come from an announcement.
    const bcast = `${prefix}-bc:`;
    const others = new Set(await invalidationIds());
    const agent = await startInProcessAgent(redis.url, {
      changeDetection: "track",
      pollIntervalMs: 60_000,
      lockPatterns: [`${bcast}*`],
    });
    try {
      // After the first poll's SCAN pass, which could otherwise find the first key before its announcement is read.
      await waitFor("track mode live, first pass done", () => {
        const s = agent.loop.statuses()[0]!;
        return s.changeDetection === "track" && s.lastScanAt !== undefined;
      });
      const announced = async (key: string) => {
        await c.set(key, "owner-1", "PX", 60_000);
        await waitFor(`${key} acquired`, () => agent.types(key).join() === "acquired");
        expect(agent.events.find((e) => e.resource === key)!.detail?.observedBy).toBe("notification");
      };
      await announced(`${bcast}first`);
      const [id] = (await invalidationIds()).filter((x) => !others.has(x));
      expect(id).toBeDefined();
      await c.call("CLIENT", "KILL", "ID", id!);
      await waitFor("a new invalidation connection, tracking live", async () => {
        const now = (await invalidationIds()).filter((x) => !others.has(x));
        return now.length === 1 && now[0] !== id && agent.loop.statuses()[0]!.changeDetection === "track";
      });
      // The announcing connection stayed up: its prefixes must now be announced to the new connection.
      await announced(`${bcast}second`);
      expect(agent.log.join("\n")).not.toMatch(/not registered/);
    } finally {
      agent.stop();
    }
  });

  it("reports a FLUSHALL (an invalidation without keys) as releases in both modes", async () => {
    const key = `${prefix}:lock:flushed`;
    await c.set(key, "owner-F", "PX", 60_000);
    await bothSee(key, ["acquired"]);
    await c.flushall();
    await bothSee(key, ["acquired", "released"]);
  });

  it("follows a server restart: the locks it lost are lost, and new ones are tracked again", async () => {
    const key = `${prefix}:lock:before-restart`;
    await c.set(key, "owner-R", "PX", 60_000);
    await bothSee(key, ["acquired"]);
    const port = redis.port;
    await redis.stop();
    redis = await startRedis([], port);
    c = redis.client();
    await bothSee(key, ["acquired", "lost"], 20_000);
    await waitFor("track mode live after the restart", () => detection(track).changeDetection === "track", {
      timeoutMs: 15_000,
      state: () => track.log.slice(-6).join(" | "),
    });
    const after = `${prefix}:lock:after-restart`;
    await c.set(after, "owner-S", "PX", 60_000);
    await bothSee(after, ["acquired"]);
    await c.pexpire(after, 90_000);
    await bothSee(after, ["acquired", "renewed"]);
    expect(track.events.filter((e) => e.resource === after).at(-1)!.detail?.observedBy).toBe("notification");
  });
});
