import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AlertsResponse, ResourceHistory, TopContended } from "../../lib/contract/alerts";
import type { HealthResponse } from "../../lib/contract/api";
import { freePort } from "../harness/ports";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc } from "../harness/stack";
import { WebhookReceiver } from "../harness/webhook-receiver";

let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;
let receiver: WebhookReceiver;

beforeAll(async () => {
  redis = await startRedis();
  // The receiver's port is reserved but nothing listens yet: the receiver is down when the first alert fires.
  receiver = new WebhookReceiver(await freePort());
  dashboard = await startDashboard({
    env: {
      ALERT_WEBHOOK_URLS: `${receiver.url}/generic,slack:${receiver.url}/slack`,
      PUBLIC_URL: "http://127.0.0.1:1",
      // Resolve one second after the condition clears (30 s by default) so the test sees resolutions quickly.
      ALERT_RESOLVE_AFTER_MS: "1000",
    },
  });
  agent = startAgent(dashboard.url, { REDIS_URLS: redis.url, HAZARD_MEMORY_MS: "4000" });
  await waitFor("agent watching", async () =>
    (await dashboard.get<HealthResponse>("/api/health")).sources.some((s) => s.up),
  );
});

afterAll(async () => {
  await agent?.stop();
  await dashboard?.stop();
  dashboard?.cleanup();
  await redis?.stop();
  await receiver?.stop();
});

async function alerts() {
  return (await dashboard.get<AlertsResponse>("/api/alerts")).alerts;
}

function delivered(path: string, event: string, resource: string): boolean {
  return receiver.received.some((r) => {
    if (r.path !== path) return false;
    const body = r.body as { event?: string; alert?: { resource?: string }; text?: string };
    return path === "/generic"
      ? body.event === event && body.alert?.resource === resource
      : typeof body.text === "string" &&
          body.text.includes(resource) &&
          (event === "alert.resolved") === body.text.includes("resolved");
  });
}

describe("alerts from real scenarios, delivered by webhook", () => {
  it("expired while held: A outlives its TTL, B takes the lock; raised, delivered once the receiver is up, resolved", async () => {
    const a = redis.client();
    const b = redis.client();
    const key = "alerts:lock:invoice-run";
    // Long enough for the agent's paced SCAN to find it before it expires (no BCAST prefix names alerts:lock:*).
    await a.set(key, "worker-A-5b1f0c7e9d", "PX", 2000, "NX");
    await waitFor("A's lease runs out while A still works", async () => (await a.exists(key)) === 0);
    expect(await b.set(key, "worker-B-77aa01c3e2", "PX", 30_000, "NX")).toBe("OK");

    await waitFor("alert raised", async () =>
      (await alerts()).some((x) => x.rule === "expired-while-held" && x.resource === key && x.state === "open"),
    );
    const alert = (await alerts()).find((x) => x.rule === "expired-while-held" && x.resource === key)!;
    expect(alert.severity).toBe("critical");
    expect(JSON.stringify(alert.evidence)).toContain("worker-A-5b1f0c7e9d");

    // The receiver was down: the outbox keeps retrying, so it gets the alert once it is up.
    expect(receiver.received).toHaveLength(0);
    await receiver.start();
    await waitFor(
      "both webhooks delivered",
      () => delivered("/generic", "alert.raised", key) && delivered("/slack", "alert.raised", key),
      {
        timeoutMs: 20_000,
      },
    );

    await waitFor("resolved when the takeover is no longer recent", async () =>
      (await alerts()).some((x) => x.id === alert.id && x.state === "resolved"),
    );
    await waitFor("resolution delivered", () => delivered("/generic", "alert.resolved", key), { timeoutMs: 10_000 });
  });

  it("no TTL: raised, acknowledged by an operator, resolved when the lock goes", async () => {
    const c = redis.client();
    const key = "alerts:lock:setnx-crash";
    await c.setnx(key, "1");
    await waitFor("no-ttl alert", async () => (await alerts()).some((x) => x.rule === "no-ttl" && x.resource === key));
    const alert = (await alerts()).find((x) => x.rule === "no-ttl" && x.resource === key)!;
    const viewerAck = await dashboard.request(`/api/alerts/${alert.id}/ack`, { method: "POST" }, "viewer");
    expect(viewerAck.status).toBe(403);
    const ack = await dashboard.request(`/api/alerts/${alert.id}/ack`, { method: "POST" }, "operator");
    expect(ack.status).toBe(200);
    expect(await ack.json()).toMatchObject({ state: "acknowledged", ackedBy: "test-operator" });
    // Deduplicated: the condition still holds, yet there is one alert for this lock and rule.
    expect((await alerts()).filter((x) => x.rule === "no-ttl" && x.resource === key)).toHaveLength(1);
    await c.del(key);
    await waitFor("resolved", async () => (await alerts()).find((x) => x.id === alert.id)?.state === "resolved");
  });

  it("exposes Prometheus metrics and contention history", async () => {
    const c = redis.client();
    const key = "alerts:lock:contended";
    for (let i = 0; i < 3; i++) {
      await c.set(key, `holder-${i}-abcdef0123`, "PX", 30_000);
      await waitFor(`holder ${i} seen`, async () =>
        (await dashboard.allLocks()).locks.some((l) => l.resource === key && l.owner === `holder-${i}-abcdef0123`),
      );
      await c.del(key);
      await waitFor(
        `holder ${i} gone`,
        async () => !(await dashboard.allLocks()).locks.some((l) => l.resource === key),
      );
    }
    await c.set("alerts:lock:held-now", "x", "PX", 60_000);
    await waitFor("held lock visible", async () =>
      (await dashboard.allLocks()).locks.some((l) => l.resource === "alerts:lock:held-now"),
    );

    const res = await dashboard.request("/api/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toMatch(/lockscope_locks_held\{backend="redis",source="redis:\/\/127\.0\.0\.1:\d+\/0"\} [1-9]/);
    expect(text).toMatch(/lockscope_source_up\{kind="redis",source="[^"]+"\} 1/);
    expect(text).toMatch(/lockscope_hold_seconds_count\{backend="redis"\} [1-9]/);
    expect((await dashboard.request("/api/metrics", {}, null)).status).toBe(401);

    const { events } = await dashboard.get<{ events: Array<{ lockId: string }> }>(
      `/api/events?resource=${key}&limit=1`,
    );
    const history = await dashboard.get<ResourceHistory>(`/api/history/locks/${events[0]!.lockId}?window=15m`);
    expect(history.buckets.reduce((n, b) => n + b.acquisitions, 0)).toBe(3);
    expect(history.hold.count).toBe(3);
    expect(history.timeline.map((t) => t.end)).toEqual(["released", "released", "released"]);
    const top = await dashboard.get<TopContended>("/api/history/top?window=1h");
    expect(top.resources.find((r) => r.resource === key)).toMatchObject({ acquisitions: 3 });
  });

  it("delivers an alert raised while the receiver is down even across a dashboard restart", async () => {
    await receiver.stop();
    const c = redis.client();
    const key = "alerts:lock:restart-pending";
    await c.setnx(key, "1");
    await waitFor("alert raised", async () => (await alerts()).some((x) => x.rule === "no-ttl" && x.resource === key));
    dashboard = await dashboard.restart();
    await receiver.start();
    await waitFor("pending webhook sent after the restart", () => delivered("/generic", "alert.raised", key), {
      timeoutMs: 20_000,
    });
    await c.del(key);
  });
});
