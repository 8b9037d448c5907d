import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { Redis } from "ioredis";
import type zookeeper from "node-zookeeper-client";
import type { DemoServer } from "../../scripts/demo/demo-processes";
import { startOrderRace } from "../../scripts/demo/order-race";
import { startRedlockDemo, type RedlockDemo } from "../../scripts/demo/redlock-group";
import { startZookeeperDemo } from "../../scripts/demo/zookeeper-locks";
import { connectClient } from "../harness/zookeeper";
import { signIn } from "./sign-in";

/**
 * Screenshots of every page at 1440×900 and 390×844, from the quick start's demo run against the e2e stack: the
 * demo workload (scripts/demo-workload.ts, as a process, as the quick start starts it) on the e2e redis-server, and
 * the demo of every backend (scripts/demo/) on the e2e Redlock group and ZooKeeper. Each page must show the demo's
 * data, not an empty state, and at 390 px nothing may stick out sideways. The PNGs go to docs/screenshots/:
 * regenerate them with `npx playwright test screenshots`.
 */
const baseUrl = () => process.env.E2E_BASE_URL!;
const OUT = path.join(import.meta.dirname, "..", "..", "docs", "screenshots");
const ROOT = path.join(import.meta.dirname, "..", "..");

/** The demo's Redis keys (scripts/demo-workload.ts, order-race.ts) and Redlock resources, removed afterwards. */
const DEMO_KEYS = [
  "lock:legacy:nightly-report",
  "lock:orders:checkout",
  "lock:payments:settle",
  "lock:inventory:sku-4711",
  "mutex:email-digest",
  "lock:billing:invoice-run",
  "semaphore:db-connection-pool",
  "shipping:label-printer",
  "redisson_lock_queue:{shipping:label-printer}",
  "redisson_lock_timeout:{shipping:label-printer}",
  "orders:grab-lock:1042",
  "orders:grab-lock:1043",
];
const REDLOCK_KEYS = ["payments:settlement-lock", "reports:nightly-export-lock", "orders:grab-lock:1044"];
const ZK_PATHS = ["/ParentLock", "/services", "/kazoo", "/product-lock-42"];

let workload: ChildProcess | null = null;
let redis: Redis;
let redlock: RedlockDemo | null = null;
const stops: Array<() => void> = [];

test.describe.configure({ mode: "serial" });

test.beforeAll(async () => {
  test.setTimeout(60_000);
  mkdirSync(OUT, { recursive: true });
  const redisUrl = `redis://127.0.0.1:${process.env.E2E_REDIS_PORT}`;
  // The demo workload exactly as the quick start runs it: its own process, stopped with SIGTERM.
  workload = spawn(path.join(ROOT, "node_modules", ".bin", "tsx"), ["scripts/demo-workload.ts"], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URLS: redisUrl, LOCKSCOPE_STOP_WITH_PID: String(process.pid) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  workload.stderr?.on("data", (d: Buffer) => process.stderr.write(`demo workload: ${d.toString()}`));
  // The e2e stack's Redlock group stands in for the demo's five throwaway redis-servers; it freezes them the same way.
  const pids = process.env.E2E_REDLOCK_PIDS!.split(",").map(Number);
  const nodes = process.env.E2E_REDLOCK_PORTS!.split(",").map(
    (port, i) =>
      ({
        port: Number(port),
        process: undefined as never,
        freeze: () => process.kill(pids[i]!, "SIGSTOP"),
        thaw: () => process.kill(pids[i]!, "SIGCONT"),
      }) satisfies DemoServer,
  );
  redlock = startRedlockDemo(nodes);
  stops.push(() => redlock?.stop());
  const zk = await startZookeeperDemo(process.env.E2E_ZK_CONNECT!);
  stops.push(() => zk.stop());
  redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const race = startOrderRace(redis, redlock.redlock);
  stops.push(() => race.stop());
  // The workload's process is up once its lock without TTL is written (tsx starts it in a few seconds).
  await expect.poll(() => redis.exists("lock:legacy:nightly-report"), { timeout: 30_000 }).toBe(1);
});

test.afterAll(async () => {
  for (const s of stops.reverse()) s();
  workload?.kill("SIGTERM");
  // Later specs share this stack: the demo's keys and lock parents go with it.
  await redis.del(...DEMO_KEYS);
  redis.disconnect();
  for (const port of process.env.E2E_REDLOCK_PORTS!.split(",")) {
    const node = new Redis({ host: "127.0.0.1", port: Number(port), maxRetriesPerRequest: 1 });
    await node.del(...REDLOCK_KEYS);
    node.disconnect();
  }
  const cleaner = await connectClient(process.env.E2E_ZK_CONNECT!);
  for (const p of ZK_PATHS) await new Promise<void>((r) => (cleaner as zookeeper.Client).removeRecursive(p, () => r()));
  cleaner.close();
});

async function shoot(page: Page, name: string, width: number, fullPage = false): Promise<void> {
  if (width < 640) {
    // Nothing wider than the phone's screen: no sideways scrolling of the page.
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    // Soft: every page is still visited and pictured, and each one that sticks out is named in the failure.
    expect.soft(overflow, `${name} at ${width} px is ${overflow} px wider than the screen`).toBeLessThanOrEqual(0);
  }
  // Alert toasts are hidden in the pictures only (new ones keep arriving from the demo): they would cover the page.
  await page.screenshot({
    path: path.join(OUT, `${name}-${width}.png`),
    fullPage,
    animations: "disabled",
    style: '[data-testid="alert-toast"] { visibility: hidden !important; }',
  });
}

async function everyPage(page: Page, width: number): Promise<void> {
  await page.goto(`${baseUrl()}/login`);
  await expect(page.getByLabel("Name")).toBeVisible();
  await shoot(page, "login", width);

  await signIn(page, "admin1");
  const rows = page.getByTestId("lock-row");
  // Keys of the workload are found by the agent's paced SCAN: seconds, not milliseconds.
  await expect(rows.filter({ hasText: "lock:legacy:nightly-report" }).first()).toBeVisible({ timeout: 20_000 });
  await expect.poll(() => rows.count(), { timeout: 10_000 }).toBeGreaterThanOrEqual(6);
  await shoot(page, "locks", width);

  await page.goto(`${baseUrl()}/fleet`);
  await expect.poll(() => page.getByTestId("fleet-group").count(), { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
  await shoot(page, "fleet", width);

  await page.goto(`${baseUrl()}/redlock`);
  await expect(
    page
      .getByTestId("redlock-row")
      .filter({ hasText: /payments:settlement-lock|reports:nightly-export-lock/ })
      .first(),
  ).toBeVisible({ timeout: 15_000 });
  await shoot(page, "redlock", width);

  await page.goto(`${baseUrl()}/zookeeper`);
  for (const parent of ["/ParentLock", "/kazoo/locks/report-builder", "/services/billing/locks/invoice-run"])
    await expect(page.locator(`[data-testid="zk-parent"][data-resource="${parent}"]`)).toBeVisible({
      timeout: 15_000,
    });
  await shoot(page, "zookeeper", width);

  // The order race's textbook lock: drivers hand it on every few seconds, so its timeline has several lanes.
  let lockId = "";
  await expect
    .poll(
      async () => {
        const res = await page.request.get(`${baseUrl()}/api/events?resource=orders:grab-lock:1042&limit=1`);
        lockId = ((await res.json()) as { events: Array<{ lockId: string }> }).events[0]?.lockId ?? "";
        return lockId;
      },
      { timeout: 10_000 },
    )
    .not.toBe("");
  await page.goto(`${baseUrl()}/locks/${lockId}`);
  await expect(page.getByTestId("detail-resource")).toHaveText("orders:grab-lock:1042");
  const lanes = page.getByTestId("holder-timeline").getByTestId("holder-lane");
  await expect.poll(() => lanes.count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
  await expect(page.getByTestId("timeline-tick").first()).toBeVisible();
  await shoot(page, "lock-detail", width, true);

  await page.goto(`${baseUrl()}/history`);
  await expect(page.getByTestId("top-row").filter({ hasText: "orders:grab-lock" }).first()).toBeVisible({
    timeout: 10_000,
  });
  await shoot(page, "history", width);

  await page.goto(`${baseUrl()}/alerts`);
  const legacy = page.getByTestId("alert-row").filter({ hasText: "lock:legacy:nightly-report" }).first();
  await expect(legacy).toBeVisible({ timeout: 10_000 });
  // An operator acknowledges the lock without TTL: the audit log then has the demo's own entry.
  if ((await legacy.getAttribute("data-state")) === "open") {
    await legacy.getByRole("button", { name: "Acknowledge" }).click();
    await expect(legacy).toHaveAttribute("data-state", "acknowledged");
  }
  await shoot(page, "alerts", width);

  await page.goto(`${baseUrl()}/audit`);
  await expect(page.getByTestId("audit-row").first()).toBeVisible({ timeout: 10_000 });
  await shoot(page, "audit", width);
}

test("every page at 1440×900 shows the demo's data", async ({ page }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await everyPage(page, 1440);
});

test("every page at 390×844 shows the demo's data without sideways overflow", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await everyPage(page, 390);
});
