import { describe, expect, it } from "vitest";
import { FAMILY_MAX_BYTES, KEY_MAX_BYTES, TypeGuesses, familyOf } from "../../agent/sources/redis/type-guess";

const b = (s: string) => Buffer.from(s, "latin1");

describe("familyOf", () => {
  it("is the key up to and including its last separator", () => {
    expect(familyOf(b("orderLock:17"))).toBe("orderLock:");
    expect(familyOf(b("semaphore:pool:3"))).toBe("semaphore:pool:");
    expect(familyOf(b("job-lock:default:report-job-12"))).toBe("job-lock:default:report-job-");
    expect(familyOf(b("redisson_lock__channel:{orders}"))).toBe("redisson_lock__channel:{orders}");
    expect(familyOf(b("locks/tenant.a/17"))).toBe("locks/tenant.a/");
  });

  it("has none for a key without a separator, a family too long, or a key too long to look into", () => {
    expect(familyOf(b("nightlylock"))).toBeUndefined();
    expect(familyOf(b(""))).toBeUndefined();
    expect(familyOf(b(`${"a".repeat(FAMILY_MAX_BYTES - 1)}:1`))).toBe(`${"a".repeat(FAMILY_MAX_BYTES - 1)}:`);
    expect(familyOf(b(`${"a".repeat(FAMILY_MAX_BYTES)}:1`))).toBeUndefined();
    expect(familyOf(b(`lock:${"x".repeat(KEY_MAX_BYTES)}`))).toBeUndefined();
    expect(familyOf(Buffer.alloc(1 << 20, 0x3a))).toBeUndefined();
  });

  it("keeps every byte: keys differing only in non-UTF-8 bytes are different families", () => {
    const a = familyOf(Buffer.from([0x6c, 0xff, 0x3a, 0x31]));
    const c = familyOf(Buffer.from([0x6c, 0xfe, 0x3a, 0x31]));
    expect(a).toBeDefined();
    expect(a).not.toBe(c);
  });
});

describe("TypeGuesses", () => {
  it("guesses nothing for a family not read yet, then the type its keys had", () => {
    const g = new TypeGuesses();
    expect(g.guess(b("orderLock:1"))).toBeUndefined();
    g.learn(b("orderLock:1"), "hash");
    expect(g.guess(b("orderLock:2"))).toBe("hash");
    expect(g.guess(b("other:2"))).toBeUndefined();
  });

  it("learns nothing from a key gone or a key without a family", () => {
    const g = new TypeGuesses();
    g.learn(b("orderLock:1"), "none");
    g.learn(b("plainkey"), "hash");
    expect(g.guess(b("orderLock:2"))).toBeUndefined();
    expect(g.size).toBe(0);
  });

  it("follows the majority of a family that mixes types", () => {
    const g = new TypeGuesses();
    for (let i = 0; i < 5; i++) g.learn(b(`lock:${i}`), "string");
    g.learn(b("lock:h1"), "hash");
    g.learn(b("lock:h2"), "hash");
    expect(g.guess(b("lock:9"))).toBe("string");
    for (let i = 0; i < 4; i++) g.learn(b(`lock:z${i}`), "zset");
    expect(g.guess(b("lock:9"))).toBe("zset");
  });

  it("keeps at most its bound of families", () => {
    const g = new TypeGuesses(3);
    for (let i = 0; i < 10; i++) g.learn(b(`f${i}:1`), "hash");
    expect(g.size).toBeLessThanOrEqual(3);
    expect(g.guess(b("f9:2"))).toBe("hash");
  });
});
