import { describe, expect, it } from "vitest";
import { cutPrefix, escapeBytes, escapeText } from "../../agent/core/escape";

describe("escapeBytes", () => {
  const cases: Array<[string, Buffer, string, number?]> = [
    ["plain ASCII stays", Buffer.from("lock:orders"), "lock:orders"],
    ["UTF-8 text stays", Buffer.from("verrou:café:🔒"), "verrou:café:🔒"],
    ["control characters become \\xNN", Buffer.from("a\nb\tc\u0000"), "a\\x0ab\\x09c\\x00"],
    ["backslash is doubled so escapes are unambiguous", Buffer.from("a\\x41"), "a\\\\x41"],
    ["invalid UTF-8 bytes become \\xNN", Buffer.from([0x6c, 0xff, 0xfe, 0x6b]), "l\\xff\\xfek"],
    ["a truncated multi-byte sequence", Buffer.from([0x61, 0xe2, 0x82]), "a\\xe2\\x82"],
    ["overlong encoding is rejected", Buffer.from([0xc0, 0xaf]), "\\xc0\\xaf"],
    ["UTF-16 surrogates encoded in UTF-8 are rejected", Buffer.from([0xed, 0xa0, 0x80]), "\\xed\\xa0\\x80"],
    ["bidi override cannot disguise a key", Buffer.from("lock\u202Egnp.exe"), "lock\\u{202e}gnp.exe"],
    ["DEL and C1 controls", Buffer.from([0x7f, 0xc2, 0x85]), "\\x7f\\u{85}"],
    ["empty", Buffer.alloc(0), ""],
  ];
  for (const [name, input, want] of cases) {
    it(name, () => expect(escapeBytes(input)).toBe(want));
  }

  it("truncates long values and says how much was left out", () => {
    const out = escapeBytes(Buffer.alloc(1000, 0x61), 10);
    expect(out).toBe(`${"a".repeat(10)}…(+990 bytes)`);
  });

  it("shows printable ASCII exactly at the limit whole, one byte over it cut, and reads a view's own bytes", () => {
    expect(escapeBytes(Buffer.from(" lock:~x "), 9)).toBe(" lock:~x ");
    expect(escapeBytes(Buffer.from("lock:1234"), 8)).toBe("lock:123…(+1 bytes)");
    expect(escapeBytes(Buffer.from("lock:1234"), 9, 20)).toBe("lock:1234…(+11 bytes)");
    expect(escapeBytes(Buffer.from("xxlock:a\\yy").subarray(2, 8))).toBe("lock:a");
  });

  it("counts the unread rest of a value read only as a prefix", () => {
    expect(escapeBytes(Buffer.from("abc"), 10, 1_000_000)).toBe("abc…(+999997 bytes)");
  });

  it("bounds the output of a megabyte of binary", () => {
    const bin = Buffer.alloc(1 << 20);
    for (let i = 0; i < bin.length; i++) bin[i] = (i * 131) & 0xff;
    const out = escapeBytes(bin, 256);
    expect(out.length).toBeLessThan(256 + 8 + 30);
    expect(out).toMatch(/…\(\+\d+ bytes\)$/);
  });

  it("escapeText escapes a JS string the same way", () => {
    expect(escapeText("x\ny")).toBe("x\\x0ay");
  });
});

describe("cutPrefix", () => {
  it("gives the shown start of a text escapeBytes cut, and null for one shown whole", () => {
    const cut = escapeBytes(Buffer.from("a".repeat(300)), 128);
    expect(cutPrefix(cut)).toBe("a".repeat(128));
    expect(cutPrefix(escapeBytes(Buffer.from("short-token")))).toBeNull();
    expect(cutPrefix("ends with …(+N bytes) but not a count")).toBeNull();
  });
});
