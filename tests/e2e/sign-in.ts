import { expect, type Page } from "@playwright/test";
import { TEST_PASSWORD } from "../harness/stack";

/** Signs in through the real form, as a person would. */
export async function signIn(page: Page, name: "viewer1" | "operator1" | "admin1"): Promise<void> {
  await page.goto(`${process.env.E2E_BASE_URL}/`);
  await expect(page).toHaveURL(/\/login\?next=/);
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Password").fill(TEST_PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("signed-in-as")).toContainText(name);
  await expect(page.getByTestId("connection")).toHaveAttribute("data-state", "live");
}
