import { expect, test } from "@playwright/test";
import { Redis } from "ioredis";
import { signIn } from "./sign-in";

let redis: Redis;
test.beforeAll(() => {
  redis = new Redis({ host: "127.0.0.1", port: Number(process.env.E2E_REDIS_PORT), maxRetriesPerRequest: 1 });
});
test.afterAll(() => redis.disconnect());

test("an operator releases a stale lock with a reason; it is gone and audited", async ({ page }) => {
  const key = `e2e:lock:stale-report-${Date.now()}`;
  await redis.set(key, "crashed-worker-42");
  await signIn(page, "operator1");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 3000 });
  await row.getByRole("link").click();

  await page.getByRole("button", { name: "Force release…" }).click();
  const panel = page.getByTestId("release-panel");
  await expect(panel).toContainText("no TTL");
  await panel.getByLabel("Reason").fill("worker-42 crashed at 03:10; nightly report is stuck");
  await panel.getByRole("button", { name: /Dry run/ }).click();
  await expect(panel.getByTestId("release-plan")).toContainText(`DEL ${key}`);
  expect(await redis.exists(key)).toBe(1);

  const release = panel.getByRole("button", { name: "Release now" });
  await expect(release).toBeDisabled();
  await panel.getByLabel("Confirm resource name").fill(key);
  await release.click();
  await expect(page.getByTestId("release-result")).toContainText("released");
  expect(await redis.exists(key)).toBe(0);
  await expect(page.getByTestId("detail-status")).toContainText("not held (released)");

  await page.getByRole("link", { name: "Audit" }).click();
  const entry = page.getByTestId("audit-row").filter({ hasText: key }).first();
  await expect(entry).toHaveAttribute("data-outcome", "released");
  await expect(entry).toContainText("operator1");
  await expect(entry).toContainText("worker-42 crashed");
});

test("a viewer finds no release control and no audit page", async ({ page }) => {
  const key = `e2e:lock:viewer-${Date.now()}`;
  await redis.set(key, "someone", "PX", 60_000);
  await signIn(page, "viewer1");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 3000 });
  await row.getByRole("link").click();
  await expect(page.getByTestId("detail-status")).toHaveText("held");
  await expect(page.getByRole("button", { name: "Force release…" })).toHaveCount(0);
  await expect(page.getByRole("link", { name: "Audit" })).toHaveCount(0);
  await redis.del(key);
});
