import { describe, expect, it } from "vitest";
import { compileBytePrefilter, compileGlob, compilePatterns, supersetGlob } from "../../agent/core/glob";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";
import { prng } from "../harness/prng";

const latin1 = (s: string) => Buffer.from(s, "latin1");

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

describe("compileBytePrefilter (a necessary condition on the key's bytes)", () => {
  it("rules out the filler keys of a SCAN pass and keeps every lock name the default patterns match", () => {
    const may = compileBytePrefilter(DEFAULT_LOCK_PATTERNS);
    for (const k of ["key:0", "key:989999", "session:1", "cache:user:9", "", "\xff\x00"]) {
      expect(may(latin1(k)), k).toBe(false);
    }
    for (const k of ["lock:a", "ParentLock", "app:LOCK", "mutex:x", "job-MUTEX", "semaphore:pool", "blocks"]) {
      expect(may(latin1(k)), k).toBe(true);
    }
  });

  it("never rules out a key that a pattern matches (random patterns and keys)", () => {
    const rnd = prng(20261201);
    const alphabet = ["a", "b", "k", "K", ":", "\xe9", "*", "?", "[", "]", "^", "-", "\\"];
    const pick = (n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join("");
    let matched = 0;
    let ruledOut = 0;
    for (let round = 0; round < 300; round++) {
      const patterns = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(1 + Math.floor(rnd() * 6)));
      const full = compilePatterns(patterns);
      const may = compileBytePrefilter(patterns);
      for (let i = 0; i < 60; i++) {
        const key = pick(Math.floor(rnd() * 8)).replace(/[*?[\]^\\-]/g, "");
        const m = full(key);
        if (m) matched++;
        if (!may(latin1(key))) {
          ruledOut++;
          expect(m, `${JSON.stringify(patterns)} ${JSON.stringify(key)}`).toBe(false);
        }
      }
    }
    // Both sides were exercised: keys that match, and keys the filter rules out.
    expect(matched).toBeGreaterThan(100);
    expect(ruledOut).toBeGreaterThan(1000);
  });

  it("lets everything through when a pattern has no literal or class (`*`, `??`), and nothing with no pattern", () => {
    expect(compileBytePrefilter(["lock:*", "*"])(latin1("key:1"))).toBe(true);
    expect(compileBytePrefilter(["??"])(latin1("xy"))).toBe(true);
    expect(compileBytePrefilter([])(latin1("lock:1"))).toBe(false);
  });

  it("reads classes, ranges, negation and escapes as the glob does", () => {
    const may = compileBytePrefilter(["h[a-c]llo", "x\\*y"]);
    expect(may(latin1("hbllo"))).toBe(true);
    expect(may(latin1("hdllo"))).toBe(false); // no byte of [a-c]
    expect(may(latin1("cab"))).toBe(false); // no h, l or o
    expect(may(latin1("olhb"))).toBe(true); // every class is there: the regular expression decides (no match)
    expect(may(latin1("x*y"))).toBe(true);
    expect(may(latin1("hxy"))).toBe(false); // no a-c, and no "*" for the second pattern
    expect(compileBytePrefilter(["[^a]"])(latin1("a"))).toBe(false);
    expect(compileBytePrefilter(["[^a]"])(latin1("b"))).toBe(true);
  });
});

describe("supersetGlob (one SCAN MATCH glob every pattern implies)", () => {
  it("aligns the defaults' runs: lock, mute(x) and sema(phore) in any case, and rules out the filler keys", () => {
    const glob = supersetGlob(DEFAULT_LOCK_PATTERNS)!;
    expect(glob).toBe("*[\\L\\M\\S\\l\\m\\s][\\E\\O\\U\\e\\o\\u][\\C\\M\\T\\c\\m\\t][\\A\\E\\K\\a\\e\\k]*");
    const re = compileGlob(glob);
    for (const k of ["lock:a", "ParentLock", "app:LOCK", "mutex:x", "job-MUTEX", "semaphore:pool", "blocks"]) {
      expect(re.test(k), k).toBe(true);
    }
    for (const k of ["key:0", "key:989999", "session:1", "cache:user:9", ""]) expect(re.test(k), k).toBe(false);
  });

  it("never leaves out a key that a pattern matches (random patterns and keys, hostile bytes)", () => {
    const rnd = prng(20261206);
    const alphabet = ["a", "b", "k", "K", ":", "\xe9", "\x00", "\xff", "*", "?", "[", "]", "^", "-", "\\"];
    const pick = (n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join("");
    let matched = 0;
    let leftOut = 0;
    for (let round = 0; round < 300; round++) {
      const patterns = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(1 + Math.floor(rnd() * 6)));
      const full = compilePatterns(patterns);
      const glob = supersetGlob(patterns);
      const superset = glob === null ? null : compileGlob(glob);
      for (let i = 0; i < 60; i++) {
        const key = pick(Math.floor(rnd() * 8)).replace(/[*?[\]^\\-]/g, "");
        const m = full(key);
        if (m) matched++;
        if (superset && !superset.test(key)) {
          leftOut++;
          expect(m, `${JSON.stringify(patterns)} ${JSON.stringify(glob)} ${JSON.stringify(key)}`).toBe(false);
        }
      }
    }
    expect(matched).toBeGreaterThan(100);
    expect(leftOut).toBeGreaterThan(1000);
  });

  it("is null when a pattern has no literal or class (`*`, `??`) or there is no pattern", () => {
    expect(supersetGlob(["lock:*", "*"])).toBeNull();
    expect(supersetGlob(["??"])).toBeNull();
    expect(supersetGlob([])).toBeNull();
    expect(supersetGlob(["lock:?x"])).toBe("*\\l\\o\\c\\k\\:*");
  });
});
