import { expect, test } from "@playwright/test";
import type zookeeper from "node-zookeeper-client";
import { connectClient, CreateMode, zkCreate, zkMkdirp, zkWatchExists } from "../harness/zookeeper";
import { signIn } from "./sign-in";

const baseUrl = () => process.env.E2E_BASE_URL!;
const root = `/e2e-${Date.now()}`;
const parent = `${root}/ParentLock`;
const clients: zookeeper.Client[] = [];

function removeTree(c: zookeeper.Client, path: string): Promise<void> {
  return new Promise((resolve) => c.removeRecursive(path, () => resolve()));
}

test.afterAll(async () => {
  const cleaner = await connectClient(process.env.E2E_ZK_CONNECT!);
  await removeTree(cleaner, root);
  cleaner.close();
  for (const c of clients) c.close();
});

test("the wait chain of a ZooKeeper lock parent updates live when the holder's session closes", async ({ page }) => {
  await signIn(page, "viewer1");

  // Three real sessions queue the way the seeds recipe does: a sequential node each, each watching the one before.
  for (let i = 0; i < 3; i++) clients.push(await connectClient(process.env.E2E_ZK_CONNECT!, 6000));
  const [a, b, c] = clients as [zookeeper.Client, zookeeper.Client, zookeeper.Client];
  await zkMkdirp(a, parent);
  const nodes: string[] = [];
  for (const s of [a, b, c]) nodes.push(await zkCreate(s, `${parent}/Lock`, null, CreateMode.EPHEMERAL_SEQUENTIAL));
  await zkWatchExists(b, nodes[0]!);
  await zkWatchExists(c, nodes[1]!);
  const names = nodes.map((n) => n.slice(n.lastIndexOf("/") + 1));

  await page.goto(`${baseUrl()}/zookeeper`);
  const section = page.locator(`[data-testid="zk-parent"][data-resource="${parent}"]`);
  // Found by the agent's discovery walk (a resync every 5 s in the e2e stack).
  await expect(section).toBeVisible({ timeout: 15_000 });
  const chain = section.getByTestId("zk-chain");
  const cards = chain.getByTestId("zk-node");
  await expect(cards).toHaveCount(3);
  await expect
    .poll(async () =>
      cards.evaluateAll((els) => els.map((e) => `${e.getAttribute("data-role")}:${e.getAttribute("data-node")}`)),
    )
    .toEqual([`holder:${names[0]}`, `waiter:${names[1]}`, `waiter:${names[2]}`]);
  await expect(section.getByTestId("zk-queue-length")).toHaveAttribute("data-waiting", "2");
  // The e2e ZooKeeper allows four-letter words: the watches are read from the server, not inferred.
  await expect(chain.getByTestId("zk-edge")).toHaveCount(2);
  await expect
    .poll(async () => chain.getByTestId("zk-edge").evaluateAll((els) => els.map((e) => e.getAttribute("data-watch"))), {
      timeout: 10_000,
    })
    .toEqual(["observed", "observed"]);
  await expect(cards.nth(0)).toContainText("seeds-parent-lock");
  await expect(cards.nth(0)).toContainText("exclusive");
  await expect(cards.nth(0)).toContainText("127.0.0.1:");

  // The wait time counts up in the browser between updates.
  const wait = cards.nth(2).getByTestId("zk-wait");
  const first = Number(await wait.getAttribute("data-ms"));
  await expect.poll(async () => Number(await wait.getAttribute("data-ms")), { timeout: 5000 }).toBeGreaterThan(first);

  // The holder's client goes away: its session's node goes with it and the next waiter holds.
  const closedAt = Date.now();
  a.close();
  await expect
    .poll(
      async () =>
        cards.evaluateAll((els) => els.map((e) => `${e.getAttribute("data-role")}:${e.getAttribute("data-node")}`)),
      {
        timeout: 5000,
      },
    )
    .toEqual([`holder:${names[1]}`, `waiter:${names[2]}`]);
  expect(Date.now() - closedAt).toBeLessThan(5000);
  await expect(section.getByTestId("zk-queue-length")).toHaveAttribute("data-waiting", "1");
});
