import { describe, expect, it } from "vitest";
import { safeNext } from "../../components/auth/safe-next";

// Issue 10 item 4: after sign-in, `next` (decoded from the query string) must never leave the dashboard's origin.
const ORIGIN = "https://lockscope.example";

describe("safeNext", () => {
  it.each([
    ["/", `${ORIGIN}/`],
    ["/locks?q=orders#top", `${ORIGIN}/locks?q=orders#top`],
    ["/locks/abc", `${ORIGIN}/locks/abc`],
    ["/audit?actor=a%20b", `${ORIGIN}/audit?actor=a%20b`],
  ])("keeps the same-origin path %j", (next, expected) => {
    expect(safeNext(next, ORIGIN)).toBe(expected);
  });

  it.each([
    // What the login page receives for ?next=/%5Cevil.example/phish and ?next=/%09/evil.example/phish.
    "/\\evil.example/phish",
    "/\t/evil.example/phish",
    "/\n/evil.example/phish",
    "/\r\n/evil.example",
    "\\\\evil.example",
    "//evil.example",
    "///evil.example",
    "/\\/evil.example",
    "https://evil.example/phish",
    "http:evil.example",
    "https:/evil.example",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "evil.example",
    "",
    "http://[",
  ])("sends %j home instead", (next) => {
    expect(safeNext(next, ORIGIN)).toBe(`${ORIGIN}/`);
  });

  it("never returns a URL on another origin, even for paths that normalise to `//host`", () => {
    for (const next of ["/.//evil.example/x", "/./\\evil.example", "/%2e//evil.example", "/a/..//evil.example"]) {
      const out = safeNext(next, ORIGIN);
      expect(new URL(out).origin, next).toBe(ORIGIN);
      expect(out.startsWith(`${ORIGIN}/`), next).toBe(true);
    }
  });

  it("treats a missing next as the home page", () => {
    expect(safeNext(null, ORIGIN)).toBe(`${ORIGIN}/`);
    expect(safeNext(undefined, ORIGIN)).toBe(`${ORIGIN}/`);
  });
});
