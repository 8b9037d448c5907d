import { expect, test, type Page } from "@playwright/test";
import { TEST_PASSWORD } from "../harness/stack";
import { signIn } from "./sign-in";

// Issue 10 in the real browser: pages work under the Content-Security-Policy (no violation, hydrated and live), are
// never cacheable, a crafted `next` cannot send the signed-in browser to another site, and sign-out ends the
// session for good.
const base = () => process.env.E2E_BASE_URL!;

function watchCspViolations(page: Page): string[] {
  const violations: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Content-Security-Policy/i.test(m.text())) violations.push(m.text());
  });
  return violations;
}

test("every page loads and hydrates under the CSP, with a per-response nonce and no-store", async ({ page }) => {
  const violations = watchCspViolations(page);
  await signIn(page, "operator1");
  const nonces = new Set<string>();
  for (const path of ["/", "/redlock", "/zookeeper", "/history", "/alerts", "/audit"]) {
    const res = await page.goto(`${base()}${path}`);
    expect(res?.status(), path).toBe(200);
    const headers = res!.headers();
    const nonce = /script-src 'self' 'nonce-([^']+)'/.exec(headers["content-security-policy"] ?? "")?.[1];
    expect(nonce, path).toBeTruthy();
    nonces.add(nonce!);
    expect(headers["cache-control"], path).not.toMatch(/s-maxage|public/);
    expect(headers["cache-control"], path).toMatch(/no-store/);
    // Hydrated: the client code ran and the live socket is up.
    await expect(page.getByTestId("connection"), path).toHaveAttribute("data-state", "live");
  }
  expect(nonces.size).toBe(6);
  expect(violations).toEqual([]);
});

test("an injected inline script without the nonce does not run", async ({ page }) => {
  await signIn(page, "viewer1");
  const ran = await page.evaluate(() => {
    const s = document.createElement("script");
    s.textContent = "window.__injected = true";
    document.body.appendChild(s);
    return (window as unknown as { __injected?: boolean }).__injected === true;
  });
  expect(ran).toBe(false);
});

for (const next of [
  "/%5Cevil.example/phish",
  "/%09/evil.example/phish",
  "//evil.example/phish",
  "https://evil.example/",
]) {
  test(`sign-in with ?next=${next} stays on the dashboard`, async ({ page }) => {
    await page.goto(`${base()}/login?next=${next}`);
    await page.getByLabel("Name").fill("viewer1");
    await page.getByLabel("Password").fill(TEST_PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("signed-in-as")).toContainText("viewer1");
    expect(new URL(page.url()).origin).toBe(base());
  });
}

test("a same-origin next is followed after sign-in", async ({ page }) => {
  await page.goto(`${base()}/login?next=${encodeURIComponent("/alerts?state=open")}`);
  await page.getByLabel("Name").fill("viewer1");
  await page.getByLabel("Password").fill(TEST_PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(`${base()}/alerts?state=open`);
});

test("sign-out revokes the session: the old cookie no longer opens anything", async ({ page, context }) => {
  await signIn(page, "viewer1");
  const cookie = (await context.cookies()).find((c) => c.name === "lockscope_session")!;
  await page.getByRole("button", { name: "sign out" }).click();
  await expect(page).toHaveURL(/\/login/);
  const replay = await fetch(`${base()}/api/locks`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
  expect(replay.status).toBe(401);
});

test("with the pages on, a malformed cookie neither hangs nor stops the dashboard", async ({ page }) => {
  for (const path of ["/api/health", "/login", "/", "/_next/static/none.js", "/locks/%zz", "/api/locks/%zz"]) {
    const res = await fetch(`${base()}${path}`, { headers: { cookie: "theme=100%; x=%zz" }, redirect: "manual" });
    expect(res.status, path).toBeLessThan(500);
  }
  await signIn(page, "viewer1");
});
