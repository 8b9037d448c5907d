import { expect, test } from "@playwright/test";
import type { Redis } from "ioredis";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, type Proc } from "../harness/stack";
import { signIn } from "./sign-in";

const COUNT = 5000;
const PREFIX = `e2e:big:${Date.now()}:lock:job-`;
const name = (i: number) => `${PREFIX}${String(i).padStart(5, "0")}`;
let server: RedisServer;
let agent: Proc;
let redis: Redis;

// Its own redis-server and an unpaced agent feeding the shared dashboard: 5,000 keys never slow the shared agent
// (paced to a share of its Redis) that the other specs rely on.
test.beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  agent = startAgent(process.env.E2E_BASE_URL!, {
    REDIS_URLS: server.url,
    AGENT_ID: "e2e-large-table",
    REDIS_SERVER_TIME_BUDGET_PERCENT: "0",
    POLL_INTERVAL_MS: "500",
  });
  const p = redis.pipeline();
  for (let i = 0; i < COUNT; i++) p.set(name(i), `token-${i}`, "PX", 300_000);
  await p.exec();
});

async function deleteAll(): Promise<void> {
  const p = redis.pipeline();
  for (let i = 0; i < COUNT; i++) p.del(name(i));
  await p.exec();
}

test.afterAll(async () => {
  await deleteAll();
  await agent.stop();
  await server.stop();
});

test("a table of 5,000 locks keeps only the visible rows in the DOM, scrolls to its end, and filters", async ({
  page,
}) => {
  test.setTimeout(120_000);
  await signIn(page, "viewer1");
  const search = page.getByLabel("Filter locks");
  await search.fill(PREFIX);
  await expect(page.getByTestId("lock-count")).toHaveText(String(COUNT), { timeout: 60_000 });
  await expect(page.getByTestId("lock-row").first()).toContainText(name(0));

  // Virtualized: a screenful of rows (plus overscan), not 5,000.
  const domRows = await page.locator("[data-testid=lock-row], [data-testid=lock-row-pending]").count();
  expect(domRows).toBeGreaterThan(5);
  expect(domRows).toBeLessThan(100);

  // To the very end: the last rows arrive with their window, and still only a screenful is drawn.
  await page.getByTestId("locks-scroll").evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
  const last = page.locator(`[data-testid=lock-row][data-index="${COUNT - 1}"]`);
  await expect(last).toContainText(name(COUNT - 1), { timeout: 10_000 });
  expect(await page.locator("[data-testid=lock-row], [data-testid=lock-row-pending]").count()).toBeLessThan(100);

  // Half-way, by dragging the scrollbar: the rows there, not placeholders, within a moment.
  await page.getByTestId("locks-scroll").evaluate((el) => el.scrollTo({ top: el.scrollHeight / 2 }));
  await expect(page.getByTestId("lock-row-pending")).toHaveCount(0, { timeout: 10_000 });
  const middle = Number(await page.getByTestId("lock-row").first().getAttribute("data-index"));
  expect(middle).toBeGreaterThan(COUNT / 2 - 100);
  await expect(page.getByTestId("lock-row").first()).toContainText(name(middle));

  // Filtering narrows the table on the server and starts again at the top.
  await search.fill(name(4321));
  await expect(page.getByTestId("lock-count")).toHaveText("1");
  await expect(page.getByTestId("lock-row")).toHaveCount(1);
  await expect(page.getByTestId("lock-row")).toContainText("token-4321");

  // Sorting by TTL, descending, is answered by the server too.
  await search.fill(PREFIX);
  await expect(page.getByTestId("lock-count")).toHaveText(String(COUNT));
  await page.getByRole("button", { name: /^TTL/ }).click();
  await page.getByRole("button", { name: /^TTL/ }).click();
  await expect(page.getByRole("button", { name: /^TTL/ })).toHaveText(/▼/);
  const firstTtl = Number(await page.getByTestId("lock-row").first().getByTestId("ttl").getAttribute("data-ttl"));
  const secondTtl = Number(await page.getByTestId("lock-row").nth(1).getByTestId("ttl").getAttribute("data-ttl"));
  expect(firstTtl).toBeGreaterThanOrEqual(secondTtl - 300);

  // Released again, and gone from the table, before the next spec: the shared agent has caught up with them.
  await deleteAll();
  await expect(page.getByTestId("lock-count")).toHaveText("0", { timeout: 60_000 });
});
