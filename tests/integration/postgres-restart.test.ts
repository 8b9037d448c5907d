import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestDatabase,
  startPrivatePostgres,
  type PrivatePostgres,
  type TestDatabase,
} from "../harness/postgres-server";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc } from "../harness/stack";

// A PostgreSQL restart while an agent streams: the agent keeps what the dashboard could not store and the store is
// idempotent, so nothing is lost and nothing is stored twice. The machine's shared PostgreSQL must not be
// restarted, so this runs its own server (initdb + pg_ctl) on a free loopback port.
let server: PrivatePostgres;
let db: TestDatabase;
let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;

beforeAll(async () => {
  server = await startPrivatePostgres();
  db = await createTestDatabase(server.url);
  redis = await startRedis();
  dashboard = await startDashboard({ env: { DATABASE_URL: db.url } });
  agent = startAgent(dashboard.url, { REDIS_URLS: redis.url, LOCK_PATTERNS: "pgr:*" });
});

afterAll(async () => {
  await agent?.stop();
  await dashboard?.stop();
  dashboard?.cleanup();
  await redis?.stop();
  await server?.destroy();
});

async function stored(): Promise<Array<{ id: string; type: string; resource: string }>> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return (await c.query(`SELECT "id", "type", "resource" FROM "Event" WHERE "resource" LIKE 'pgr:%'`)).rows;
  } finally {
    await c.end();
  }
}

const count = (rows: Awaited<ReturnType<typeof stored>>, type: string) => rows.filter((r) => r.type === type).length;

describe("a PostgreSQL restart while an agent streams", () => {
  it("loses no event and stores none twice", async () => {
    const c = redis.client();
    for (let i = 0; i < 20; i++) await c.set(`pgr:lock:${i}`, `tok-${i}`, "PX", 300_000);
    await waitFor("first 20 acquisitions stored", async () => count(await stored(), "acquired") === 20, {
      timeoutMs: 20_000,
    });

    await server.stop();
    // While the history store is down the agent keeps watching: 40 new locks, 10 released.
    for (let i = 20; i < 60; i++) await c.set(`pgr:lock:${i}`, `tok-${i}`, "PX", 300_000);
    for (let i = 0; i < 10; i++) await c.del(`pgr:lock:${i}`);
    await waitFor("the dashboard refusing updates it could not store", () =>
      dashboard.output().includes("could not store events"),
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\ndashboard output:\n${dashboard.output().slice(-3000)}`);
    });
    await waitFor("the agent holding the unacknowledged events", () =>
      /dashboard did not acknowledge: store unavailable/.test(agent.output()),
    );
    // The dashboard stays up while its store is down, and its live view still follows the agent: updates are applied
    // on receipt, and the snapshots the agent sends after each refused update carry no events to store.
    expect((await dashboard.request("/api/health")).status).toBe(200);
    await waitFor("the live view showing the locks taken and released while the store is down", async () => {
      const live = (await dashboard.allLocks()).locks.filter((l) => l.resource.startsWith("pgr:"));
      return live.length === 50 && !live.some((l) => /^pgr:lock:\d$/.test(l.resource));
    });

    await server.start();
    await waitFor(
      "every event stored after PostgreSQL is back",
      async () => {
        const rows = await stored();
        return count(rows, "acquired") === 60 && count(rows, "released") === 10;
      },
      { timeoutMs: 30_000 },
    ).catch(async (err: unknown) => {
      const rows = await stored().catch(() => []);
      throw new Error(
        `${String(err)} (acquired ${count(rows, "acquired")}, released ${count(rows, "released")})\n` +
          `dashboard output:\n${dashboard.output().slice(-2000)}\nagent output:\n${agent.output().slice(-2000)}`,
      );
    });

    const rows = await stored();
    for (let i = 0; i < 60; i++) {
      const mine = rows.filter((r) => r.resource === `pgr:lock:${i}`);
      expect(
        mine.filter((r) => r.type === "acquired"),
        `pgr:lock:${i}`,
      ).toHaveLength(1);
      expect(
        mine.filter((r) => r.type === "released"),
        `pgr:lock:${i}`,
      ).toHaveLength(i < 10 ? 1 : 0);
    }
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    const after = await dashboard.allLocks();
    expect(after.locks.filter((l) => l.resource.startsWith("pgr:"))).toHaveLength(50);
  });
});
