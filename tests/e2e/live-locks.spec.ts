import { expect, test } from "@playwright/test";
import { Redis } from "ioredis";
import { signIn } from "./sign-in";

const baseUrl = () => process.env.E2E_BASE_URL!;
let redis: Redis;

test.beforeAll(() => {
  redis = new Redis({ host: "127.0.0.1", port: Number(process.env.E2E_REDIS_PORT), maxRetriesPerRequest: 1 });
  // The textbook release an application runs (the agent's own compare-and-delete guards a fingerprint instead).
  redis.defineCommand("releaseLock", {
    numberOfKeys: 1,
    lua: 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end',
  });
});

test.afterAll(() => redis.disconnect());

test("a lock set in Redis appears within 2 s counting down, vanishes on release, and its history is shown", async ({
  page,
}) => {
  const key = `e2e:lock:checkout-${Date.now()}`;
  const token = "e2e-token-7f3a";
  await signIn(page, "viewer1");

  await redis.set(key, token, "PX", 30_000, "NX");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  // Found by the agent's paced SCAN (no BCAST prefix names e2e:lock:*): usually within a second, given 5 s here.
  await expect(row).toBeVisible({ timeout: 5000 });
  await expect(row).toContainText(token);
  await expect(row).toContainText("generic");

  // The TTL counts down in the browser between agent updates.
  const ttl = row.getByTestId("ttl");
  const first = Number(await ttl.getAttribute("data-ttl"));
  expect(first).toBeGreaterThan(20_000);
  await expect
    .poll(async () => Number(await ttl.getAttribute("data-ttl")), { timeout: 5000 })
    .toBeLessThan(first - 500);

  // Filter narrows the table to the lock.
  await page.getByLabel("Filter locks").fill("checkout");
  await expect(page.getByTestId("lock-row")).toHaveCount(1);

  const lockUrl = await row.getByRole("link").getAttribute("href");
  // The holder releases with its own token, as an application does.
  expect(
    await (redis as unknown as { releaseLock(k: string, t: string): Promise<number> }).releaseLock(key, token),
  ).toBe(1);
  await expect(row).toHaveCount(0, { timeout: 3000 });

  await page.goto(`${baseUrl()}${lockUrl}`);
  await expect(page.getByTestId("detail-resource")).toHaveText(key);
  await expect(page.getByTestId("detail-status")).toContainText("not held (released)");
  const history = page.getByTestId("history-row");
  await expect(history).toHaveCount(2);
  await expect(history.nth(0)).toHaveAttribute("data-type", "released");
  await expect(history.nth(1)).toHaveAttribute("data-type", "acquired");
});

test("a lock without TTL is flagged, and a hostile key name renders as text", async ({ page }) => {
  const key = `e2e:lock:<img src=x onerror=alert(1)>-${Date.now()}`;
  await redis.setnx(key, "1");
  let dialogs = 0;
  page.on("dialog", (d) => {
    dialogs++;
    void d.dismiss();
  });
  await signIn(page, "viewer1");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 3000 });
  await expect(row.getByTestId("ttl")).toHaveAttribute("data-ttl", "none");
  await expect(row.getByTestId("hazard")).toHaveText("no-ttl");
  expect(dialogs).toBe(0);
  await redis.del(key);
});
