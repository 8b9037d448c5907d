import { expect, test } from "@playwright/test";
import { Redis } from "ioredis";
import { signIn } from "./sign-in";

// Issue 14's pages, as the operator at 3 a.m. uses them: lock detail, alerts, history, a phone-sized header.
const baseUrl = () => process.env.E2E_BASE_URL!;
let redis: Redis;
test.beforeAll(() => {
  redis = new Redis({ host: "127.0.0.1", port: Number(process.env.E2E_REDIS_PORT), maxRetriesPerRequest: 1 });
});
test.afterAll(() => redis.disconnect());

test("lock detail keeps its layout and the typed reason while the lock flips between held and not held", async ({
  page,
}) => {
  const key = `e2e:lock:flip-${Date.now()}`;
  await redis.set(key, "worker-a", "PX", 120_000);
  await signIn(page, "operator1");
  const row = page.getByTestId("lock-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 5000 });
  await row.getByRole("link").click();
  await expect(page.getByTestId("detail-status")).toHaveText("held");

  await page.getByRole("button", { name: "Force release…" }).click();
  const panel = page.getByTestId("release-panel");
  const reason = "worker-a hung since 03:02, job queue stalled";
  await panel.getByLabel("Reason").fill(reason);
  const fields = page.getByTestId("detail-fields");
  const heldBox = await fields.boundingBox();

  await redis.del(key);
  await expect(page.getByTestId("detail-status")).toContainText("not held");
  // Same rows in the same place, greyed; the panel and its reason stay, its buttons say why they are disabled.
  await expect(fields).toContainText("worker-a");
  const goneBox = await fields.boundingBox();
  expect(goneBox?.y).toBe(heldBox?.y);
  expect(goneBox?.height).toBe(heldBox?.height);
  await expect(panel.getByLabel("Reason")).toHaveValue(reason);
  await expect(panel.getByRole("button", { name: "Release now" })).toBeDisabled();
  await expect(panel).toContainText("The lock is not held right now");

  await redis.set(key, "worker-a", "PX", 120_000);
  await expect(page.getByTestId("detail-status")).toHaveText("held");
  await expect(panel.getByLabel("Reason")).toHaveValue(reason);

  // A plain Redis lock: a sentence instead of an empty waiters chart.
  await expect(page.getByTestId("waiters-note")).toHaveText(
    "No waiters are visible for plain Redis locks (clients retry).",
  );
  // History: paged and filterable, times with a zone, never epoch milliseconds.
  const log = page.getByTestId("event-log");
  await expect(log.getByTestId("history-row").first()).toBeVisible();
  await expect(log.getByTestId("event-log-page")).toHaveText("page 1 (newest, live)");
  await expect(log.getByTestId("history-row").first().locator("td").first()).toHaveText(
    /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+$/,
  );
  await log.getByLabel("Which events").selectOption({ label: "expired" });
  await expect(log).toContainText("No stored events.");
  await log.getByLabel("Which events").selectOption({ label: "acquired and released" });
  await expect(log.locator('[data-testid="history-row"][data-type="released"]').first()).toBeVisible();
  await redis.del(key);
});

test("an unknown lock id says the lock does not exist", async ({ page }) => {
  await signIn(page, "viewer1");
  await page.goto(`${baseUrl()}/locks/no-such-lock-0000`);
  await expect(page.getByTestId("detail-missing")).toContainText("No lock with id no-such-lock-0000 exists");
  await expect(page.getByTestId("detail-status")).toHaveText("does not exist");
});

test("alerts show last seen, occurrences and evidence, filter by rule and state, and sort with aria-sort", async ({
  page,
}) => {
  const key = `e2e:lock:alert-page-${Date.now()}`;
  await redis.setnx(key, "1");
  await signIn(page, "operator1");
  await page.getByRole("link", { name: /^Alerts/ }).click();
  const row = page.getByTestId("alert-row").filter({ hasText: key });
  await expect(row).toBeVisible({ timeout: 10_000 });
  await expect(row.getByTestId("alert-occurrences")).toHaveText("1");
  await expect(row.getByTestId("alert-last-seen")).toHaveText(/ago|just now/);
  await expect(row.getByTestId("alert-evidence")).toContainText("evidence");

  await page.getByLabel("Rule").selectOption("no-ttl");
  await expect(page.locator('[data-testid="alert-row"]:not([data-rule="no-ttl"])')).toHaveCount(0);
  await page.getByLabel("State").selectOption("resolved");
  await expect(row).toHaveCount(0);
  await page.getByLabel("State").selectOption("open");
  await expect(row).toBeVisible();

  const raised = page.getByRole("columnheader", { name: "Raised" });
  await expect(raised).toHaveAttribute("aria-sort", "none");
  await raised.getByRole("button").click();
  await expect(raised).toHaveAttribute("aria-sort", "descending");

  // Any state again: an acknowledged alert must stay in view to show who acknowledged it.
  await page.getByLabel("State").selectOption({ label: "any" });
  await row.getByRole("button", { name: "Acknowledge" }).click();
  await expect(row.getByTestId("alert-acked")).toContainText(/by operator1 at \d{4}-/);

  // History ranks what hurts: a lock without TTL leads "time stuck without TTL".
  await page.getByRole("link", { name: "History" }).click();
  await expect(page.getByTestId("fleet-chart")).toBeVisible();
  await page.getByLabel("Rank by").selectOption("no-ttl");
  await expect(page.getByTestId("top-table")).toHaveAttribute("data-rank", "no-ttl");
  await expect(page.getByTestId("top-row").filter({ hasText: key })).toBeVisible();
  await redis.del(key);
});

test.describe("at 390 px", () => {
  test.use({ viewport: { width: 390, height: 844 } });
  test("the sign-in name has focus and the header wraps without cutting anything off", async ({ page }) => {
    await page.goto(`${baseUrl()}/`);
    await expect(page.getByLabel("Name")).toBeFocused();
    await signIn(page, "operator1");
    const bar = page.getByTestId("header-bar");
    const overflow = await bar.evaluate((el) => el.scrollWidth - el.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    for (const name of ["Locks", "Fleet", "Redlock", "ZooKeeper", "History", "Audit"]) {
      const box = await page.getByRole("banner").getByRole("link", { name, exact: true }).boundingBox();
      expect(box, name).not.toBeNull();
      expect(box!.x + box!.width, name).toBeLessThanOrEqual(390);
    }
  });
});
