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
  // A fourth holder still holds it: its lane runs open-ended to now.
  await redis.set(key, "holder-3-0123456789ab", "PX", 60_000);
  await expect(page.getByTestId("lock-row").filter({ hasText: "holder-3" })).toBeVisible({ timeout: 5000 });
  const { events } = (await (
    await page.request.get(`${process.env.E2E_BASE_URL}/api/events?resource=${encodeURIComponent(key)}&limit=1`)
  ).json()) as {
    events: Array<{ lockId: string }>;
  };
  await page.goto(`${process.env.E2E_BASE_URL}/locks/${events[0]!.lockId}`);
  const contention = page.getByTestId("contention");
  await expect(contention.getByTestId("acquisitions-chart").locator(".recharts-bar-rectangle").first()).toBeVisible();
  // Its ticks are in the one time format (HH:MM), with the zone named once.
  await expect(contention.getByTestId("acquisitions-zone")).toHaveText(/^times in \S+/);
  // (The browser's own time format would say "01:35 PM" in an en-US locale.)
  const chart = contention.getByTestId("acquisitions-chart");
  await expect(chart).toContainText(/\d{2}:\d{2}/);
  await expect(chart).not.toContainText(/AM|PM/);
  // The holders timeline: a lane per holder, each bar saying in words who held it from when to when.
  const timeline = contention.getByTestId("holder-timeline");
  const lanes = timeline.getByTestId("holder-lane");
  await expect(lanes).toHaveCount(4);
  const bars = timeline.getByTestId("holder-bar");
  await expect(bars.first()).toHaveAttribute(
    "aria-label",
    /^holder-0-0123456789ab: held from \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+ to \d{4}-.+, [\d.]+s, released$/,
  );
  await expect(bars.last()).toHaveAttribute("data-open", "true");
  await expect(bars.last()).toHaveAttribute(
    "aria-label",
    /^holder-3-0123456789ab: held from .+ to now, .+, still held$/,
  );
  // Its time axis, fitted to these holdings: ticks in the one format (whole seconds or minutes), the zone named, a
  // marker for now.
  const ticks = timeline.getByTestId("timeline-tick");
  // Whole seconds at the least: these holdings span 2 to 6 s depending on the machine, so 2 ticks or more.
  expect(await ticks.count()).toBeGreaterThanOrEqual(2);
  for (const label of await ticks.allTextContents()) expect(label).toMatch(/^\d{2}:\d{2}(:\d{2})?$/);
  await expect(timeline).toContainText(/times in \S+/);
  await expect(timeline.getByTestId("timeline-now")).toBeAttached();
  // Lanes in time order, left to right: each holder's bar starts after the one before.
  const lefts = await bars.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().left));
  expect(lefts).toEqual([...lefts].sort((a, b) => a - b));
  await expect(contention).toContainText("Hold time: 3 samples");

  await page.getByRole("link", { name: "History" }).click();
  await expect(page.getByTestId("top-row").filter({ hasText: key })).toBeVisible();
  await expect(page.getByTestId("fleet-chart").locator(".recharts-bar-rectangle").first()).toBeVisible();
  await redis.del(key);
});
