import { expect, test } from "@playwright/test";
import { Redis } from "ioredis";
import { signIn } from "./sign-in";

let redis: Redis;
test.beforeAll(() => {
  redis = new Redis({ host: "127.0.0.1", port: Number(process.env.E2E_REDIS_PORT), maxRetriesPerRequest: 1 });
});
test.afterAll(() => redis.disconnect());

test.use({ timezoneId: "Europe/Berlin" });

test("times show one format with the zone named; the UTC toggle is remembered across a reload", async ({ page }) => {
  const key = `e2e:lock:zone-${Date.now()}`;
  await redis.set(key, "e2e-zone-token", "PX", 60_000, "NX");
  await signIn(page, "viewer1");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 5000 });
  await row.getByRole("link", { name: key }).click();
  const since = page.locator("time").first();
  await expect(since).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} (CET|GMT\+1)$/);
  await page.getByTestId("zone-toggle").click();
  await expect(page.getByTestId("zone-toggle")).toHaveText("UTC");
  await expect(since).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  await page.reload();
  await expect(page.getByTestId("zone-toggle")).toHaveText("UTC");
  await expect(page.locator("time").first()).toHaveText(/ UTC$/);
  await page.getByTestId("zone-toggle").click(); // leave the shared browser profile as it was
  await redis.del(key);
});

test("when the browser loses the dashboard: a banner with the last update's age, a dimmed page, frozen TTLs", async ({
  page,
  context,
}) => {
  const key = `e2e:lock:stale-${Date.now()}`;
  await redis.set(key, "e2e-stale-token", "PX", 60_000, "NX");
  await signIn(page, "viewer1");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 5000 });
  await context.setOffline(true);
  await expect(page.getByTestId("stale-banner")).toContainText(/last update \d+ s ago/, { timeout: 60_000 });
  await expect(page.locator('[data-stale="true"]')).toHaveCount(1);
  const ttl = row.getByTestId("ttl");
  const frozen = await ttl.getAttribute("data-ttl");
  // the banner's age moves on while the TTL stays where the last update left it
  await expect(page.getByTestId("stale-banner")).not.toContainText(/last update [01] s ago/, { timeout: 5000 });
  expect(await ttl.getAttribute("data-ttl")).toBe(frozen);
  await context.setOffline(false);
  await expect(page.getByTestId("stale-banner")).toHaveCount(0, { timeout: 60_000 });
  await redis.del(key);
});
