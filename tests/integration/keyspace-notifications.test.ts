import { afterEach, describe, expect, it } from "vitest";
import type { EventsResponse } from "../../lib/contract/api";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc } from "../harness/stack";

let redis: RedisServer | undefined;
let dashboard: Dashboard | undefined;
let agent: Proc | undefined;

afterEach(async () => {
  await agent?.stop();
  await dashboard?.stop();
  dashboard?.cleanup();
  await redis?.stop();
});

async function events(resource: string) {
  return (await dashboard!.get<EventsResponse>(`/api/events?resource=${encodeURIComponent(resource)}`)).events;
}

describe("keyspace notifications", () => {
  it("report changes long before the next poll, marked as seen by a notification", async () => {
    redis = await startRedis(["--notify-keyspace-events", "KEA"]);
    dashboard = await startDashboard();
    // A one-minute poll: only a notification can explain an event within seconds.
    agent = startAgent(dashboard.url, { REDIS_URLS: redis.url, POLL_INTERVAL_MS: "60000" });
    // After the first poll, the next is a minute away.
    await waitFor("agent subscribed and past its first poll", () =>
      /keyspace notifications subscribed[\s\S]*source redis:\S+ up/.test(agent!.output()),
    );
    const c = redis.client();
    await c.set("kn:lock:fast", "tok-1", "PX", 30_000);
    await waitFor("acquired via notification", async () => (await events("kn:lock:fast")).length === 1, {
      timeoutMs: 5000,
    });
    const [acquired] = await events("kn:lock:fast");
    expect(acquired).toMatchObject({ type: "acquired", owner: "tok-1", detail: { observedBy: "notification" } });
    await c.del("kn:lock:fast");
    await waitFor("released via notification", async () => (await events("kn:lock:fast"))[0]?.type === "released", {
      timeoutMs: 5000,
    });
    // Keys that match no lock pattern are not even sent by the server (PSUBSCRIBE filters).
    await c.set("cache:user:1", "x");
    expect(agent.output()).not.toMatch(/cache:user/);
  });

  it("turn on the server's notifications only when asked to (KEYSPACE_NOTIFICATIONS=enable)", async () => {
    redis = await startRedis();
    const c = redis.client();
    expect(((await c.config("GET", "notify-keyspace-events")) as string[])[1]).toBe("");
    dashboard = await startDashboard();
    agent = startAgent(dashboard.url, {
      REDIS_URLS: redis.url,
      POLL_INTERVAL_MS: "60000",
      KEYSPACE_NOTIFICATIONS: "enable",
    });
    await waitFor("agent subscribed and past its first poll", () =>
      /keyspace notifications subscribed[\s\S]*source redis:\S+ up/.test(agent!.output()),
    );
    const flags = ((await c.config("GET", "notify-keyspace-events")) as string[])[1]!;
    for (const f of "Kg$hzlxe") expect(flags).toContain(f);
    await c.set("kn:lock:enabled", "tok-2", "PX", 30_000);
    await waitFor("acquired via notification", async () => (await events("kn:lock:enabled")).length === 1, {
      timeoutMs: 5000,
    });
  });

  it("leave the server's setting alone by default, and fall back to polling", async () => {
    redis = await startRedis();
    const c = redis.client();
    dashboard = await startDashboard();
    agent = startAgent(dashboard.url, { REDIS_URLS: redis.url, POLL_INTERVAL_MS: "300" });
    await waitFor("agent subscribed", () => /polling only until it does/.test(agent!.output()));
    expect(((await c.config("GET", "notify-keyspace-events")) as string[])[1]).toBe("");
    await c.set("kn:lock:polled", "tok-3", "PX", 30_000);
    await waitFor("acquired by poll", async () => (await events("kn:lock:polled")).length === 1);
    expect((await events("kn:lock:polled"))[0]!.detail).toMatchObject({ observedBy: "poll" });
  });
});
