import { expect, test } from "@playwright/test";
import pg from "pg";
import { createTestDatabase, type TestDatabase } from "../harness/postgres-server";
import { startRedis, type RedisServer } from "../harness/redis";
import { waitFor } from "../harness/ports";
import { startAgent, startDashboard, type Dashboard, type Proc } from "../harness/stack";
import { signIn } from "./sign-in";

// Two dashboards behind one (imagined) load balancer, started by this spec: one PostgreSQL database (created here,
// dropped after), one Redis for the socket.io adapter (FANOUT_REDIS_URL), the same SESSION_SECRET. The agent
// streams to dashboard A (API only); the browser uses dashboard B (with pages).
let fanout: RedisServer;
let watched: RedisServer;
let db: TestDatabase;
let a: Dashboard;
let b: Dashboard;
let agent: Proc;
const AGENT_ID = "e2e-agent-on-a";

test.beforeAll(async () => {
  // Two dashboard processes (one building its pages' server) and a database: more than the default 60 s on 2 cores.
  test.setTimeout(180_000);
  [fanout, watched, db] = await Promise.all([startRedis(), startRedis(), createTestDatabase()]);
  const env = {
    DATABASE_URL: db.url,
    FANOUT_REDIS_URL: fanout.url,
    SESSION_SECRET: "e2e-several-dashboards-secret-0123456789",
  };
  // Started together: the migrations' advisory lock lets one apply them while the other waits.
  [a, b] = await Promise.all([startDashboard({ env }), startDashboard({ ui: true, env })]);
  // The spec's own watched Redis, so the agent may turn its keyspace notifications on: the lock is announced at once
  // instead of waiting for the paced SCAN (which a fresh clone's loaded CI run once took longer than 5 s for). The
  // spec tests the path through A and the adapter to B, not discovery.
  agent = startAgent(a.url, {
    REDIS_URLS: watched.url,
    AGENT_ID,
    POLL_INTERVAL_MS: "250",
    KEYSPACE_NOTIFICATIONS: "enable",
  });
  // The test's 5 s for the row start once the agent streams to A: its start took 10 to 13 s in loaded runs, and a
  // run where the browser got there first failed waiting for the row.
  await waitFor("the agent connected to dashboard A", () => a.output().includes(`agent ${AGENT_ID} connected`), {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
});

test.afterAll(async () => {
  await agent?.stop();
  for (const d of [a, b]) {
    await d?.stop();
    d?.cleanup();
  }
  await db?.drop();
  await watched?.stop();
  await fanout?.stop();
});

async function auditRows(resource: string): Promise<Array<{ outcome: string; actor: string }>> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const { rows } = await c.query<{ outcome: string; actor: string }>(
      `SELECT "outcome", "actor" FROM "AuditEntry" WHERE "resource" = $1 ORDER BY "at"`,
      [resource],
    );
    return rows;
  } finally {
    await c.end();
  }
}

test("a lock taken through the agent on dashboard A shows live on B, and a release from B frees it, audited once", async ({
  page,
}) => {
  const key = `e2e:lock:fanout-${Date.now()}`;
  const token = "worker-on-a-7f3a";
  // The page is open before the lock exists: the row must arrive live, through A and the adapter.
  await signIn(page, "operator1", b.url);
  await watched.client().set(key, token, "PX", 120_000, "NX");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 5000 });
  await expect(row).toContainText(token);
  // The agent's connection is on A only: what B shows came over the adapter.
  expect(a.output()).toContain(`agent ${AGENT_ID} connected`);
  expect(b.output()).not.toContain(`agent ${AGENT_ID} connected`);

  await row.getByRole("link").click();
  await page.getByRole("button", { name: "Force release…" }).click();
  const panel = page.getByTestId("release-panel");
  await panel.getByLabel("Reason").fill("worker on A is gone; released from dashboard B");
  await panel.getByRole("button", { name: /Dry run/ }).click();
  await expect(panel.getByTestId("release-plan")).toContainText(key);
  expect(await watched.client().exists(key)).toBe(1);
  await panel.getByLabel("Confirm resource name").fill(key);
  await panel.getByRole("button", { name: "Release now" }).click();
  await expect(page.getByTestId("release-result")).toContainText("released");
  expect(await watched.client().exists(key)).toBe(0);
  await expect(page.getByTestId("detail-status")).toContainText("not held (released)");

  // One audit row for the release (and one for the dry run), written by B, the dashboard that took the request.
  const rows = await auditRows(key);
  expect(rows.map((r) => r.outcome)).toEqual(["dry-run", "released"]);
  expect(rows.every((r) => r.actor === "operator1")).toBe(true);
  await page.getByRole("link", { name: "Audit" }).click();
  const entries = page.getByTestId("audit-row").filter({ hasText: key });
  await expect(entries.and(page.locator('[data-outcome="released"]'))).toHaveCount(1);
});
