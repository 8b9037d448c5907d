import { expect, test } from "@playwright/test";
import { Redis } from "ioredis";
import Redlock from "redlock";
import { signIn } from "./sign-in";

const ports = () => process.env.E2E_REDLOCK_PORTS!.split(",").map(Number);
const pids = () => process.env.E2E_REDLOCK_PIDS!.split(",").map(Number);

let clients: Redis[] = [];
let redlock: Redlock;

test.beforeAll(() => {
  clients = ports().map((port) => new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1 }));
  for (const c of clients) c.on("error", () => undefined); // the frozen node's client complains; expected
  redlock = new Redlock(clients, { retryCount: 0 });
});

test.afterAll(() => {
  for (const c of clients) c.disconnect();
});

test("a node-redlock lock shows held 5/5 across the group; a frozen node shows live, and recovers", async ({
  page,
}) => {
  const resource = `e2e:lock:redlock-settlement-${Date.now()}`;
  const frozenNode = `redis://127.0.0.1:${ports()[0]}/0`;
  const frozenPid = pids()[0]!;
  await signIn(page, "viewer1");
  const lock = await redlock.acquire([resource], 60_000);
  try {
    // The locks table lists it once, with its quorum.
    const tableRow = page.getByTestId("lock-row").filter({ hasText: resource });
    await expect(tableRow.getByTestId("quorum-summary")).toHaveText("5/5 held", { timeout: 5000 });

    await page.getByRole("link", { name: "Redlock", exact: true }).click();
    const row = page.getByTestId("redlock-row").filter({ hasText: resource });
    await expect(row).toHaveAttribute("data-state", "held", { timeout: 5000 });
    await expect(row.getByTestId("redlock-votes")).toHaveText("5/5");
    await expect(row.locator('[data-testid="redlock-cell"][data-presence="present"][data-vote="winner"]')).toHaveCount(
      5,
    );
    const health = page.locator(`[data-testid="redlock-node"][data-node="${frozenNode}"]`);
    await expect(health).toHaveAttribute("data-state", "up");
    const cell = row.locator(`[data-testid="redlock-cell"][data-node="${frozenNode}"]`);

    process.kill(frozenPid, "SIGSTOP");
    try {
      await expect.poll(() => health.getAttribute("data-state"), { timeout: 15_000 }).toMatch(/^(slow|down)$/);
      await expect(row.getByTestId("redlock-votes")).toHaveText("4/5", { timeout: 15_000 });
      await expect(row).toHaveAttribute("data-partial", "true");
      await expect(cell).toHaveAttribute("data-presence", "unknown");
    } finally {
      process.kill(frozenPid, "SIGCONT");
    }
    await expect(health).toHaveAttribute("data-state", "up", { timeout: 15_000 });
    await expect(row.getByTestId("redlock-votes")).toHaveText("5/5", { timeout: 15_000 });
    await expect(cell).toHaveAttribute("data-presence", "present");

    // The lock's page shows the same row.
    await row.getByRole("link", { name: resource }).click();
    const panel = page.getByTestId("quorum-panel");
    await expect(panel.getByTestId("redlock-votes")).toHaveText("5/5");
    await expect(panel.getByTestId("redlock-cell")).toHaveCount(5);
  } finally {
    await lock.release().catch(() => undefined);
  }
});
