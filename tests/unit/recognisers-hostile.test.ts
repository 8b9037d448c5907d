import { describe, expect, it } from "vitest";
import type { KeySample } from "../../agent/sources/redis/redis-port";
import {
  companionKeysFor,
  companionOwner,
  RECOGNISERS,
  recognise,
  type Recognition,
} from "../../agent/sources/redis/recognisers";
import { CLIENT_A, gone, hash, list, NOW, related, str, zset } from "./recognisers-fixtures";

/**
 * Every recogniser must be total: whatever bytes, types and shapes a server (or a fake port) hands over, it
 * answers or passes, never throws, and everything it returns for display is escaped and bounded.
 */

const garbage = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37 + 11) & 0xff));
const rtlKey = "lock:\u202Eexe.txt\u{1F512}";
const A1 = `${CLIENT_A}:1`;

const hostile: Array<[string, KeySample]> = [
  ["binary garbage value", str("lock", garbage)],
  ["binary garbage key", str(garbage, "1")],
  ["invalid UTF-8 key", str(Buffer.from([0x6c, 0xc3, 0x28, 0xff]), "1")],
  ["1 MB value, prefix only", str("lock", "A".repeat(1_048_576))],
  ["1 MB value starting like ShedLock", str("job-lock:d:x", `ADDED:2024-05-01T09:59:00Z@${"h".repeat(1_048_576)}`)],
  ["RTL override and emoji key", str(rtlKey, "\u202Etoken\u0000\u001b[31m")],
  ["empty value", str("lock", "")],
  ["NaN pttl", { ...str("lock", "1"), pttl: Number.NaN }],
  ["string type without body", { key: Buffer.from("lock"), type: "string", pttl: 1 }],
  ["hash type without body", { key: Buffer.from("lock"), type: "hash", pttl: 1 }],
  ["zset type without body", { key: Buffer.from("semaphore:x"), type: "zset", pttl: 1 }],
  ["list type without body", { key: Buffer.from("redisson_lock_queue:{x}"), type: "list", pttl: 1 }],
  [
    "type says hash, body is a zset",
    { key: Buffer.from("order:1"), type: "hash", pttl: 1, zset: { length: 1, members: [[Buffer.from(A1), 1]] } },
  ],
  ["type none", gone("lock")],
  ["module type", { key: Buffer.from("lock"), type: "ReJSON-RL", pttl: 1 }],
  ["control characters in the type", { key: Buffer.from("lock"), type: "h\u0000\u202E\nash", pttl: 1 }],
  ["hash with binary fields and values", hash("order:1", [[garbage, garbage]])],
  ["hash with a huge re-entry count", hash("order:1", [[A1, "9".repeat(5000)]])],
  ["hash with an empty page but a length", hash("order:1", [], 30_000, 10_000)],
  [
    "hash with 1000 Redisson fields",
    hash(
      "order:1",
      Array.from({ length: 1000 }, (_, i): [string, string] => [`${CLIENT_A}:${i}`, "1"]),
    ),
  ],
  ["rwlock with mode garbage", hash("cfg", [["mode", garbage]])],
  [
    "rwlock with a binary holder",
    hash("cfg", [
      ["mode", "read"],
      [garbage, "1"],
    ]),
  ],
  [
    "rwlock re-entered a billion times",
    hash("cfg", [
      ["mode", "read"],
      [A1, "1000000000"],
    ]),
  ],
  [
    "zset with NaN, infinities and -0",
    zset("semaphore:x", [
      [garbage, Number.NaN],
      ["a", Number.POSITIVE_INFINITY],
      ["b", Number.NEGATIVE_INFINITY],
      ["c", -0],
    ]),
  ],
  [
    "zset with scores beyond Date",
    zset(
      "semaphore:x",
      [
        ["a", 1e300],
        ["b", -1e300],
      ],
      5_000,
    ),
  ],
  [
    "zset with 100 000 members",
    zset(
      "semaphore:x",
      Array.from({ length: 100_000 }, (_, i): [string, number] => [`m${i}`, NOW - i]),
      5_000,
    ),
  ],
  ["list of garbage", list("redisson_lock_queue:{x}", [garbage, ""])],
  ["redisson key names that are not companions", str("redisson_lock_queue:", "1")],
];

const hostileRelated: Array<[string, Map<string, KeySample>]> = [
  ["none", new Map()],
  [
    "companions of the wrong types",
    related(
      str("redisson_lock_queue:{order:1}", garbage),
      hash("redisson_lock_timeout:{order:1}", [[garbage, garbage]]),
      list("{pool}:timeout", [garbage]),
    ),
  ],
  [
    "companions with hostile contents",
    related(
      list("redisson_lock_queue:{order:1}", [garbage, "\u202E"], -1, 1e9),
      zset("redisson_lock_timeout:{order:1}", [[garbage, Number.NaN]]),
      zset("{lock}:timeout", [[garbage, Number.NEGATIVE_INFINITY]]),
      { key: Buffer.from(`{cfg}:${A1}:rwlock_timeout:1`), type: "string", pttl: Number.NaN },
    ),
  ],
  [
    "companions with missing bodies",
    related(
      { key: Buffer.from("redisson_lock_queue:{order:1}"), type: "list", pttl: 1 },
      { key: Buffer.from("{lock}:timeout"), type: "zset", pttl: 1 },
    ),
  ],
];

// Control characters, DEL, C1 controls, bidi overrides and isolates, line separators must never reach the UI raw.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028-\u202e\u2066-\u2069]/u;

function displayed(r: Recognition): string[] {
  const out = [r.library, r.rule];
  if (r.owner !== null) out.push(r.owner);
  for (const v of Object.values(r.holder ?? {})) if (typeof v === "string") out.push(v);
  for (const w of r.waiters) out.push(w.owner, w.since ?? "", w.detail ?? "");
  for (const h of r.hazards ?? []) out.push(h.code, h.message);
  return out;
}

describe("every recogniser is total", () => {
  for (const rec of RECOGNISERS) {
    for (const [rname, rel] of hostileRelated) {
      it(`${rec.name} with related: ${rname}`, () => {
        for (const [, sample] of hostile) {
          const keyText = sample.key.toString("utf8");
          let got: Recognition | null = null;
          expect(() => {
            got = rec.recognise(sample, keyText, NOW, rel, { semaphoreLimits: new Map([[keyText, Number.NaN]]) });
          }).not.toThrow();
          if (got !== null) {
            const r = got as Recognition;
            expect(typeof r.library).toBe("string");
            expect(Array.isArray(r.waiters)).toBe(true);
          }
        }
      });
    }
  }
});

describe("recognise: hostile input is escaped and bounded", () => {
  for (const [name, sample] of hostile) {
    it(name, () => {
      for (const [, rel] of hostileRelated) {
        const r = recognise(sample, NOW, rel);
        for (const s of displayed(r)) {
          expect(s).not.toMatch(UNSAFE);
          expect(s.length).toBeLessThan(1200);
        }
        expect(r.waiters.length).toBeLessThanOrEqual(1000);
      }
      expect(() => companionKeysFor(sample.key.toString("utf8"), sample)).not.toThrow();
      expect(companionKeysFor(sample.key.toString("utf8"), sample).length).toBeLessThanOrEqual(32);
      expect(() => companionOwner(sample.key.toString("utf8"))).not.toThrow();
    });
  }

  it("an RTL-override key gets escaped holder text", () => {
    const r = recognise(str(rtlKey, "ADDED:2024-05-01T09:59:00Z@host"), NOW);
    expect(r.library).toBe("shedlock");
    expect(displayed(r).join(" ")).not.toMatch(UNSAFE);
  });

  it("a recogniser that throws is skipped, the next one answers", () => {
    const boom = {
      name: "boom",
      recognise: () => {
        throw new Error("hostile");
      },
    };
    expect(recognise(str("lock", "1"), NOW, new Map(), {}, [boom, ...RECOGNISERS])).toMatchObject({
      rule: "integer-token",
    });
  });

  it("even with no recogniser at all something answers", () => {
    expect(recognise(str("lock", "1"), NOW, new Map(), {}, [])).toMatchObject({
      library: "generic",
      rule: "generic-string",
    });
  });
});
