import { expect, test } from "@playwright/test";
import { Redis } from "ioredis";
import { signIn } from "./sign-in";

let redis: Redis;
test.beforeAll(() => {
  redis = new Redis({ host: "127.0.0.1", port: Number(process.env.E2E_REDIS_PORT), maxRetriesPerRequest: 1 });
});
test.afterAll(() => redis.disconnect());

const CLIENT = "8743c9c0-0795-4907-87fd-6c719a6b4586";

test("a Redisson fair lock shows its library, holder details, queued waiters and hazards", async ({ page }) => {
  const name = `e2e:order-lock:${Date.now()}`;
  // Exactly what Redisson writes: the lock hash, the FIFO queue and the waiters' deadlines.
  await redis.hset(name, `${CLIENT}:57`, "2");
  await redis.pexpire(name, 30_000);
  await redis.rpush(
    `redisson_lock_queue:{${name}}`,
    "1f7c1d7e-0000-4000-8000-000000000001:12",
    "1f7c1d7e-0000-4000-8000-000000000002:31",
  );
  const now = Date.now();
  await redis.zadd(
    `redisson_lock_timeout:{${name}}`,
    now + 60_000,
    "1f7c1d7e-0000-4000-8000-000000000001:12",
    now - 10_000,
    "1f7c1d7e-0000-4000-8000-000000000002:31",
  );
  await signIn(page, "viewer1");
  const row = page.getByTestId("lock-row").filter({ hasText: name });
  await expect(row).toBeVisible({ timeout: 5000 });
  await expect(row).toContainText("redisson");
  // The companion keys are folded into the lock, not listed as locks of their own.
  await expect(page.getByTestId("lock-row").filter({ hasText: "redisson_lock_queue" })).toHaveCount(0);
  await row.getByRole("link").click();
  await expect(page.getByText(`Holder: client id`)).toBeVisible();
  await expect(page.locator("dd").filter({ hasText: CLIENT }).first()).toBeVisible();
  await expect(page.locator("dd").filter({ hasText: /^57$/ })).toBeVisible();
  await expect(page.getByTestId("waiters")).toContainText("1f7c1d7e-0000-4000-8000-000000000001:12");
  await expect(page.getByTestId("waiters").locator("li")).toHaveCount(2);
  // The second waiter's deadline has passed: Redisson would have given up on it.
  await expect(page.getByTestId("hazard").filter({ hasText: "fair-lock-waiter-expired" })).toBeVisible();
  await redis.del(name, `redisson_lock_queue:{${name}}`, `redisson_lock_timeout:{${name}}`);
});
