import { expect, test } from "@playwright/test";
import { Redis } from "ioredis";
import { signIn } from "./sign-in";

let redis: Redis;
test.beforeAll(() => {
  redis = new Redis({ host: "127.0.0.1", port: Number(process.env.E2E_REDIS_PORT), maxRetriesPerRequest: 1 });
});
test.afterAll(() => redis.disconnect());

test("a new alert pops up as a toast with a link to the lock, and shows on the alerts page", async ({ page }) => {
  await signIn(page, "operator1");
  const key = `e2e:lock:never-expires-${Date.now()}`;
  await redis.setnx(key, "1");
  const toast = page.getByTestId("alert-toast").filter({ hasText: key });
  await expect(toast).toBeVisible({ timeout: 10_000 });
  await expect(toast).toContainText("no-ttl");
  await expect(page.getByTestId("alert-badge")).toBeVisible();
  await toast.getByRole("link", { name: /history/ }).click();
  await expect(page.getByTestId("detail-resource")).toHaveText(key);

  await page.getByRole("link", { name: /^Alerts/ }).click();
  const row = page.getByTestId("alert-row").filter({ hasText: key });
  await expect(row).toHaveAttribute("data-state", "open");
  await row.getByRole("button", { name: "Acknowledge" }).click();
  await expect(row).toHaveAttribute("data-state", "acknowledged");
  await expect(row).toContainText("by operator1");
  await redis.del(key);
  await expect(row).toHaveAttribute("data-state", "resolved", { timeout: 10_000 });
});

test("the history chart of a contended lock shows its acquisitions and holders", async ({ page }) => {
  const key = `e2e:lock:contended-${Date.now()}`;
  await signIn(page, "viewer1");
  for (let i = 0; i < 3; i++) {
    await redis.set(key, `holder-${i}-0123456789ab`, "PX", 30_000);
    const row = page.getByTestId("lock-row").filter({ hasText: `holder-${i}` });
    await expect(row).toBeVisible({ timeout: 5000 });
    await redis.del(key);
    await expect(row).toHaveCount(0, { timeout: 5000 });
  }
  const { events } = (await (
    await page.request.get(`${process.env.E2E_BASE_URL}/api/events?resource=${encodeURIComponent(key)}&limit=1`)
  ).json()) as {
    events: Array<{ lockId: string }>;
  };
  await page.goto(`${process.env.E2E_BASE_URL}/locks/${events[0]!.lockId}`);
  const contention = page.getByTestId("contention");
  await expect(contention.getByTestId("acquisitions-chart").locator(".recharts-bar-rectangle").first()).toBeVisible();
  await expect(contention.getByTestId("holder-timeline").locator("> div")).toHaveCount(3);
  await expect(contention).toContainText("Hold time: 3 samples");

  await page.getByRole("link", { name: "History" }).click();
  await expect(page.getByTestId("top-row").filter({ hasText: key })).toBeVisible();
  await expect(page.getByTestId("fleet-chart").locator(".recharts-bar-rectangle").first()).toBeVisible();
});
