import { describe, expect, it } from "vitest";
import { compileGlob, compilePatterns } from "../../agent/core/glob";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";

describe("compileGlob (Redis MATCH semantics)", () => {
  const cases: Array<[string, string, boolean]> = [
    ["*lock*", "orders:lock:1", true],
    ["*lock*", "orders:LOCK:1", false],
    ["mutex:*", "mutex:a", true],
    ["mutex:*", "xmutex:a", false],
    ["h?llo", "hello", true],
    ["h?llo", "hllo", false],
    ["h[ae]llo", "hallo", true],
    ["h[ae]llo", "hillo", false],
    ["h[^e]llo", "hallo", true],
    ["h[^e]llo", "hello", false],
    ["h[a-c]llo", "hbllo", true],
    ["h[a-c]llo", "hdllo", false],
    ["a\\*b", "a*b", true],
    ["a\\*b", "axb", false],
    ["a.b", "axb", false],
    ["(x)+", "(x)+", true],
    ["[unclosed", "[unclosed", true],
    ["*", "anything\nwith newline", true],
  ];
  for (const [pattern, key, want] of cases) {
    it(`${pattern} ${want ? "matches" : "does not match"} ${JSON.stringify(key)}`, () => {
      expect(compileGlob(pattern).test(key)).toBe(want);
    });
  }

  it("the default patterns find common lock names in any case", () => {
    const match = compilePatterns(DEFAULT_LOCK_PATTERNS);
    for (const k of [
      "lock:a",
      "ParentLock",
      "app:LOCK",
      "mutex:x",
      "job-mutex",
      "semaphore:pool",
      "redisson_lock__channel:{x}",
    ]) {
      expect(match(k), k).toBe(true);
    }
    for (const k of ["session:1", "cache:user:9"]) expect(match(k), k).toBe(false);
    // A pattern match, not a lock: recognisers then label such a key generic.
    expect(match("blocks")).toBe(true);
  });
});
