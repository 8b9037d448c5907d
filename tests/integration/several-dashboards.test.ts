import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AlertsResponse } from "../../lib/contract/alerts";
import type { ReleaseResult } from "../../lib/contract/release";
import { scriptProcess } from "../../bench/support/processes";
import { freePort } from "../harness/ports";
import { createTestDatabase, type TestDatabase } from "../harness/postgres-server";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard, TEST_PASSWORD, waitFor, type Dashboard, type Proc } from "../harness/stack";
import { WebhookReceiver } from "../harness/webhook-receiver";

// Two dashboard processes behind one (imagined) load balancer: a real Redis for the socket.io adapter and the
// leader lock (FANOUT_REDIS_URL), one PostgreSQL database for history, the same SESSION_SECRET. The agent is
// connected to dashboard A only.
let fanout: RedisServer;
let watched: RedisServer;
let db: TestDatabase;
let a: Dashboard;
let b: Dashboard;
let agent: Proc;
let receiver: WebhookReceiver;

const LEASE_MS = 2000;

beforeAll(async () => {
  fanout = await startRedis();
  watched = await startRedis();
  db = await createTestDatabase();
  receiver = new WebhookReceiver(await freePort());
  await receiver.start();
  const env = {
    DATABASE_URL: db.url,
    FANOUT_REDIS_URL: fanout.url,
    SESSION_SECRET: "several-dashboards-test-secret-0123456789",
    LEADER_LEASE_MS: String(LEASE_MS),
    ALERT_WEBHOOK_URLS: `${receiver.url}/generic`,
  };
  a = await startDashboard({ env });
  b = await startDashboard({ env });
  // The test's own watched Redis, so the agent may turn its keyspace notifications on: the lock is announced at once
  // instead of waiting for the paced SCAN (a loaded fresh-clone CI run once did not see it on B within 15 s, and
  // whether A had it was not known). These tests are about A, the adapter and B, not discovery.
  agent = startAgent(a.url, { REDIS_URLS: watched.url, AGENT_ID: "agent-on-a", KEYSPACE_NOTIFICATIONS: "enable" });
});

afterAll(async () => {
  await agent?.stop();
  for (const d of [a, b]) {
    await d?.stop();
    d?.cleanup();
  }
  await receiver?.stop();
  await db?.drop();
  await watched?.stop();
  await fanout?.stop();
});

async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

const locksOn = async (d: Dashboard) => (await d.allLocks()).locks;

describe("several dashboards sharing live state through Redis", () => {
  it("shows the agent's locks on the dashboard it is not connected to", async () => {
    await watched.client().set("orders:lock:42", "worker-7-token", "PX", 120_000);
    const has = async (d: Dashboard) => (await locksOn(d)).some((l) => l.resource === "orders:lock:42");
    await waitFor("lock visible on B", () => has(b), { timeoutMs: 15_000 }).catch(async (err: unknown) => {
      // Which side missed it: the agent's discovery (A lacks it too) or the fanout to B.
      throw new Error(
        `${err instanceof Error ? err.message : String(err)}; on A: ${await has(a)}; A's log: ${a.output().slice(-1500)}`,
      );
    });
    const onB = (await locksOn(b)).find((l) => l.resource === "orders:lock:42")!;
    expect(onB).toMatchObject({ owner: "worker-7-token", agentId: "agent-on-a" });
    // The agent's connection is on A only.
    expect(a.output()).toContain("agent agent-on-a connected");
    expect(b.output()).not.toContain("agent agent-on-a connected");
  });

  it("routes a force-release asked of B to A, which holds the agent, and writes the audit row once", async () => {
    const lock = (await locksOn(b)).find((l) => l.resource === "orders:lock:42")!;
    const res = await b.request(
      `/api/locks/${encodeURIComponent(lock.id)}/release`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          expectedOwner: "worker-7-token",
          expectedFingerprint: lock.ownerFingerprint,
          reason: "worker died",
          confirm: lock.resource,
        }),
      },
      "operator",
    );
    // A failure says why: the routed release's message and both dashboards' last lines, not only "502".
    const answer = (await res.json()) as ReleaseResult;
    const why = `${answer.message}\nA:\n${a.output().slice(-1500)}\nB:\n${b.output().slice(-1500)}`;
    expect(res.status, why).toBe(200);
    expect(answer.outcome, why).toBe("released");
    expect(await watched.client().exists("orders:lock:42")).toBe(0);
    const rows = await query<{ outcome: string }>(`SELECT "outcome" FROM "AuditEntry" WHERE "lockId" = $1`, [lock.id]);
    expect(rows).toEqual([{ outcome: "released" }]);
    await waitFor("release seen on A too", async () => !(await locksOn(a)).some((l) => l.id === lock.id));
  });

  it("accepts a session made on A when presented to B", async () => {
    const login = await fetch(`${a.url}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "viewer1", password: TEST_PASSWORD }),
    });
    expect(login.status).toBe(200);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const onB = await fetch(`${b.url}/api/session`, { headers: { cookie } });
    expect(onB.status).toBe(200);
    expect(await onB.json()).toMatchObject({ name: "viewer1" });
  });

  it("elects one leader for alerts, shows its lock in both views, sends each webhook once, and hands over when the leader dies", async () => {
    const leaderOf = async (d: Dashboard) => (await locksOn(d)).find((l) => l.id === "lockscope-leader")?.owner ?? null;
    await waitFor("leader lock shown on both", async () => {
      const [la, lb] = [await leaderOf(a), await leaderOf(b)];
      return la !== null && la === lb;
    });
    const leaderId = (await leaderOf(a))!;
    const [leader, follower] = a.output().includes(`leader: this dashboard (${leaderId})`) ? [a, b] : [b, a];
    expect(follower.output()).not.toContain("leader: this dashboard");

    // An alert (a lock without a TTL), raised and delivered by the leader only.
    await watched.client().setnx("billing:lock:nightly", "1");
    const delivered = () =>
      receiver.received.filter((r) => {
        const body = r.body as { event?: string; alert?: { resource?: string } };
        return body.event === "alert.raised" && body.alert?.resource === "billing:lock:nightly";
      }).length;
    await waitFor("webhook delivered", () => delivered() === 1, { timeoutMs: 15_000 });
    const alerts = (await follower.get<AlertsResponse>("/api/alerts")).alerts.filter(
      (x) => x.resource === "billing:lock:nightly",
    );
    expect(alerts).toHaveLength(1);

    // The leader dies without resigning (SIGKILL): the other takes over once the lease has run out.
    // tsx runs the dashboard in a child node process: kill that one, by pid (and then its tsx parent).
    const node = scriptProcess(leader.process.pid!, "lib/server/main.ts");
    expect(node).not.toBeNull();
    const killedAt = Date.now();
    process.kill(node!, "SIGKILL");
    leader.process.kill("SIGKILL");
    await waitFor("follower takes over", () => follower.output().includes("leader: this dashboard"), {
      timeoutMs: LEASE_MS * 3,
    });
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + LEASE_MS / 3 + 1500);
    await waitFor("the new leader shown", async () => (await leaderOf(follower)) !== leaderId);
    if (leader === a) {
      // The agent's dashboard died with it: the agent comes back on the other one (what a load balancer does).
      await agent.stop();
      agent = startAgent(b.url, { REDIS_URLS: watched.url, AGENT_ID: "agent-on-a" });
    }
    // It evaluates alerts from the shared store: the open alert is not raised again and its webhook not resent.
    await watched.client().setnx("billing:lock:weekly", "1");
    await waitFor("a new alert delivered by the new leader", () =>
      receiver.received.some(
        (r) => (r.body as { alert?: { resource?: string } }).alert?.resource === "billing:lock:weekly",
      ),
    );
    expect(delivered()).toBe(1);
  });
});
