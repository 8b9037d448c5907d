import { expect, test, type Page } from "@playwright/test";
import { Redis } from "ioredis";
import { signIn } from "./sign-in";

const baseUrl = () => process.env.E2E_BASE_URL!;
const port = () => Number(process.env.E2E_REDIS_PORT);
let redis: Redis;
let run = 0;
/** A prefix of its own per test: the filter box narrows the shared table to this test's locks. */
const prefix = () => `e2e:tbl-lock:${Date.now()}-${++run}:`;

test.beforeAll(() => {
  redis = new Redis({ host: "127.0.0.1", port: port(), maxRetriesPerRequest: 1 });
});

test.afterAll(() => redis.disconnect());

/** Filters the table to one test's locks and waits for `n` rows. */
async function only(page: Page, p: string, n: number): Promise<void> {
  await page.getByLabel("Filter locks").fill(p);
  // Found by the agent's paced SCAN: usually within a second, given 5 s (as live-locks.spec does).
  await expect(page.getByTestId("lock-count")).toHaveText(String(n), { timeout: 5000 });
}

test("hazardous locks sort first by default, then by resource; the order is still the user's to change", async ({
  page,
}) => {
  const p = prefix();
  await redis.set(`${p}a-plain`, "tok-a", "PX", 60_000);
  await redis.set(`${p}b-plain`, "tok-b", "PX", 60_000);
  // A lock without TTL carries the critical no-ttl hazard; by name it would come last.
  await redis.set(`${p}z-never-expires`, "tok-z");
  try {
    await signIn(page, "viewer1");
    await only(page, p, 3);
    const hazards = page.getByRole("columnheader", { name: /Hazards/ });
    await expect(hazards).toHaveAttribute("aria-sort", "descending");
    const rows = page.getByTestId("lock-row");
    await expect(rows.nth(0)).toContainText(`${p}z-never-expires`);
    await expect(rows.nth(0).getByTestId("hazard")).toHaveText("no-ttl");
    await expect(rows.nth(1)).toContainText(`${p}a-plain`);
    await expect(rows.nth(2)).toContainText(`${p}b-plain`);

    await page.getByRole("button", { name: /^Resource/ }).click();
    await expect(page.getByRole("columnheader", { name: /Resource/ })).toHaveAttribute("aria-sort", "ascending");
    await expect(rows.nth(0)).toContainText(`${p}a-plain`);
    await expect(rows.nth(2)).toContainText(`${p}z-never-expires`);
  } finally {
    await redis.del(`${p}a-plain`, `${p}b-plain`, `${p}z-never-expires`);
  }
});

test("the URL carries filters and sort, and a reload restores the view", async ({ page }) => {
  const p = prefix();
  await redis.set(`${p}short`, "tok-s", "PX", 20_000);
  await redis.set(`${p}long`, "tok-l", "PX", 90_000);
  try {
    await signIn(page, "viewer1");
    await only(page, p, 2);
    await page.getByLabel("Backend").selectOption("redis");
    await page.getByRole("button", { name: /^TTL/ }).click();
    await page.getByRole("button", { name: /^TTL/ }).click();
    await expect(page.getByRole("button", { name: /^TTL/ })).toHaveText(/▼/);
    // Replaced, not pushed, once the typing settled.
    await expect(page).toHaveURL(/sort=-ttl/);
    const url = new URL(page.url());
    expect(url.searchParams.get("q")).toBe(p);
    expect(url.searchParams.get("backend")).toBe("redis");
    expect(url.searchParams.get("sort")).toBe("-ttl");

    await page.reload();
    await expect(page.getByLabel("Filter locks")).toHaveValue(p);
    await expect(page.getByLabel("Backend")).toHaveValue("redis");
    await expect(page.getByRole("columnheader", { name: /TTL/ })).toHaveAttribute("aria-sort", "descending");
    await expect(page.getByTestId("lock-count")).toHaveText("2");
    await expect(page.getByTestId("lock-row").first()).toContainText(`${p}long`);

    // A shared link opens the same view; a malformed parameter falls back to its default alone.
    await page.goto(`${baseUrl()}/?q=${encodeURIComponent(p)}&sort=bogus&hazardsOnly=1&library=generic`);
    await expect(page.getByLabel("Filter locks")).toHaveValue(p);
    await expect(page.getByRole("columnheader", { name: /Hazards/ })).toHaveAttribute("aria-sort", "descending");
    await expect(page.getByLabel("hazards only")).toBeChecked();
    await expect(page.getByTestId("link-filter")).toHaveText("library: generic ×");
    await expect(page.getByTestId("empty")).toHaveText("No lock matches the filter.");
    await expect(page).not.toHaveURL(/sort=bogus/);

    // The History page's time window and ranking are in its URL too.
    await page.goto(`${baseUrl()}/history?window=1h&by=takeovers`);
    await expect(page.getByRole("button", { name: "1h" })).toHaveAttribute("aria-pressed", "true");
    await expect(page.getByLabel("Rank by")).toHaveValue("takeovers");
    await page.getByRole("button", { name: "7d" }).click();
    await expect(page).toHaveURL(/window=7d/);
    await page.reload();
    await expect(page.getByRole("button", { name: "7d" })).toHaveAttribute("aria-pressed", "true");
  } finally {
    await redis.del(`${p}short`, `${p}long`);
  }
});

test("pause holds the rows while a lock changes in Redis, and resume shows the live view", async ({ page }) => {
  const p = prefix();
  const key = `${p}paused`;
  await redis.set(key, "owner-before", "PX", 60_000);
  try {
    await signIn(page, "viewer1");
    await only(page, p, 1);
    const row = page.getByTestId("lock-row").filter({ hasText: key });
    await expect(row).toContainText("owner-before");
    const pause = page.getByTestId("pause");
    await expect(pause).toHaveAttribute("aria-pressed", "false");
    // Keyboard: focus and Enter.
    await pause.focus();
    await page.keyboard.press("Enter");
    await expect(pause).toHaveAttribute("aria-pressed", "true");
    await expect(page.getByTestId("paused-note")).toHaveText("paused, no changes waiting");

    await redis.set(key, "owner-after", "PX", 60_000);
    await expect(page.getByTestId("paused-note")).toHaveText("paused, 1 change waiting", { timeout: 5000 });
    await expect(row).toContainText("owner-before");
    // The paused TTL keeps counting down from its last reading.
    const ttl = row.getByTestId("ttl");
    const before = Number(await ttl.getAttribute("data-ttl"));
    await expect.poll(async () => Number(await ttl.getAttribute("data-ttl"))).toBeLessThan(before - 500);

    await page.keyboard.press("Enter");
    await expect(pause).toHaveAttribute("aria-pressed", "false");
    await expect(page.getByTestId("paused-note")).toHaveCount(0);
    await expect(row).toContainText("owner-after");
  } finally {
    await redis.del(key);
  }
});

test("a released row is shown as released, fading, then disappears", async ({ page }) => {
  const p = prefix();
  const key = `${p}released`;
  await redis.set(key, "tok-r", "PX", 60_000);
  await redis.set(`${p}stays`, "tok-s", "PX", 60_000);
  try {
    await signIn(page, "viewer1");
    await only(page, p, 2);
    await redis.del(key);
    const ghost = page.getByTestId("lock-row-released").filter({ hasText: key });
    await expect(ghost).toBeVisible({ timeout: 5000 });
    await expect(ghost).toContainText("released");
    // It is not counted nor taken for a held lock meanwhile.
    await expect(page.getByTestId("lock-count")).toHaveText("1");
    await expect(page.getByTestId("lock-row").filter({ hasText: key })).toHaveCount(0);
    await expect(ghost).toHaveCount(0, { timeout: 6000 });
    await expect(page.getByTestId("lock-row").filter({ hasText: `${p}stays` })).toHaveCount(1);
  } finally {
    await redis.del(key, `${p}stays`);
  }
});

test("the source is host:port without the scheme, the port never cut, the whole source on hover", async ({ page }) => {
  const p = prefix();
  const key = `${p}source`;
  await redis.set(key, "tok", "PX", 60_000);
  try {
    await signIn(page, "viewer1");
    await only(page, p, 1);
    const source = page.getByTestId("lock-row").filter({ hasText: key }).getByTestId("source");
    await expect(source).toHaveText(`127.0.0.1:${port()}`);
    await expect(source).toHaveAttribute("title", `redis://127.0.0.1:${port()}/0`);
    // The port is drawn whole inside its cell.
    const cell = await source.boundingBox();
    const portBox = await source.locator("span").nth(1).boundingBox();
    expect(portBox!.x + portBox!.width).toBeLessThanOrEqual(cell!.x + cell!.width + 0.5);
    await expect(page.getByTestId("lock-row").filter({ hasText: key }).locator("td").nth(3)).toHaveAttribute(
      "title",
      "tok",
    );
  } finally {
    await redis.del(key);
  }
});

/** Contrast ratio (WCAG 2) of every visible text element against what is painted behind it. */
async function lowContrastTexts(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 1;
    const ctx = canvas.getContext("2d", { willReadFrequently: true })!;
    const rgba = (css: string): [number, number, number, number] => {
      ctx.clearRect(0, 0, 1, 1);
      ctx.fillStyle = "#000";
      ctx.fillStyle = css;
      ctx.fillRect(0, 0, 1, 1);
      const d = ctx.getImageData(0, 0, 1, 1).data;
      return [d[0]!, d[1]!, d[2]!, d[3]! / 255];
    };
    const over = (top: number[], under: number[]) =>
      [0, 1, 2].map((i) => top[i]! * top[3]! + under[i]! * (1 - top[3]!));
    const lum = (c: number[]) => {
      const [r, g, b] = c.map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const bad: string[] = [];
    for (const el of Array.from(document.querySelectorAll<HTMLElement>("body *"))) {
      const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent!.trim() !== "");
      if (!own || el.closest("[aria-hidden=true], .sr-only, option, svg")) continue;
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      // What is painted behind: every ancestor's background, outermost first.
      const chain: HTMLElement[] = [];
      let faded = false;
      for (let a: HTMLElement | null = el; a; a = a.parentElement) {
        chain.unshift(a);
        if (Number(getComputedStyle(a).opacity) < 1) faded = true;
      }
      // Deliberately faded (a released row going away, a stale page dimmed): not the text's own colour.
      if (faded) continue;
      let bg = [255, 255, 255];
      for (const a of chain) {
        const c = rgba(getComputedStyle(a).backgroundColor);
        if (c[3] > 0) bg = over(c, bg);
      }
      const fg = over(rgba(getComputedStyle(el).color), bg);
      const [l1, l2] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      const ratio = (l1! + 0.05) / (l2! + 0.05);
      if (ratio < 4.5) bad.push(`${ratio.toFixed(2)} "${el.textContent!.trim().slice(0, 30)}" .${el.className}`);
    }
    return bad;
  });
}

test("every text on the locks, history and alerts pages has at least 4.5:1 contrast", async ({ page }) => {
  const p = prefix();
  await redis.set(`${p}contrast`, "tok", "PX", 60_000);
  await redis.set(`${p}contrast-never`, "tok");
  try {
    await signIn(page, "operator1");
    await only(page, p, 2);
    // The check can fail: slate-500 on the page's slate-950 (about 4.2:1), the dimmest grey the pages used.
    await page.evaluate(() => {
      const probe = document.createElement("span");
      probe.id = "contrast-probe";
      probe.textContent = "probe";
      probe.style.color = "#64748b";
      document.querySelector("main")!.append(probe);
    });
    expect((await lowContrastTexts(page)).map((t) => t.split(" ")[1])).toEqual(['"probe"']);
    await page.evaluate(() => document.getElementById("contrast-probe")!.remove());
    expect(await lowContrastTexts(page)).toEqual([]);
    for (const path of ["/history", "/alerts", "/fleet", "/audit"]) {
      await page.goto(`${baseUrl()}${path}`);
      await expect(page.getByTestId("connection")).toHaveAttribute("data-state", "live");
      await page.waitForLoadState("networkidle");
      expect(await lowContrastTexts(page), path).toEqual([]);
    }
  } finally {
    await redis.del(`${p}contrast`, `${p}contrast-never`);
  }
});

test.describe("at 390 px", () => {
  test.use({ viewport: { width: 390, height: 844 } });
  test("rows become cards that lead with TTL and hazards, with no horizontal scroll", async ({ page }) => {
    const p = prefix();
    await redis.set(`${p}card-plain`, "owner-plain", "PX", 60_000);
    await redis.set(`${p}card-never`, "owner-never");
    try {
      await signIn(page, "viewer1");
      await only(page, p, 2);
      await expect(page.getByTestId("locks-scroll")).toHaveAttribute("data-layout", "cards");
      await expect(page.getByTestId("locks-table")).toHaveCount(0);
      const cards = page.locator("[data-testid=lock-row][data-layout=card]");
      await expect(cards).toHaveCount(2);
      const first = cards.first();
      await expect(first).toContainText(`${p}card-never`);
      const lead = await first.getByTestId("card-lead").boundingBox();
      const resource = await first.getByTestId("card-resource").boundingBox();
      expect(lead!.y + lead!.height).toBeLessThanOrEqual(resource!.y + 0.5);
      await expect(first.getByTestId("card-lead").getByTestId("ttl")).toHaveText("no TTL");
      await expect(first.getByTestId("card-lead").getByTestId("hazard")).toHaveText("no-ttl");
      await expect(cards.nth(1).getByTestId("card-lead").getByTestId("ttl")).toHaveAttribute("data-ttl", /^\d+$/);
      await expect(first.getByTestId("source")).toHaveText(`127.0.0.1:${port()}`);
      // Cards are measured: the second starts below the first however tall it is.
      const b1 = await first.boundingBox();
      const b2 = await cards.nth(1).boundingBox();
      expect(b2!.y).toBeGreaterThanOrEqual(b1!.y + b1!.height - 0.5);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
    } finally {
      await redis.del(`${p}card-plain`, `${p}card-never`);
    }
  });
});
