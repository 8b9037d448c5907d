import { expect, type Page } from "@playwright/test";
import { TEST_PASSWORD } from "../harness/stack";

/** Signs in through the real form, as a person would (on the suite's dashboard unless another is named). */
export async function signIn(
  page: Page,
  name: "viewer1" | "operator1" | "admin1",
  baseUrl = process.env.E2E_BASE_URL,
): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await expect(page).toHaveURL(/\/login\?next=/);
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Password").fill(TEST_PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("signed-in-as")).toContainText(name);
  await expect(page.getByTestId("connection")).toHaveAttribute("data-state", "live");
}
