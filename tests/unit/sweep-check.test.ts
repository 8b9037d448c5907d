import { describe, expect, it } from "vitest";
import { contentDigest, unchangedSince } from "../../agent/sources/redis/sweep-check";
import type { KeySample } from "../../agent/sources/redis/redis-port";

const key = Buffer.from("lock:a");
const str = (v: string, pttl = 5000, length = v.length): KeySample => ({
  key,
  type: "string",
  pttl,
  string: { prefix: Buffer.from(v), length },
});
const hash = (fields: Array<[string, string]>, length = fields.length): KeySample => ({
  key,
  type: "hash",
  pttl: 5000,
  hash: { length, fields: fields.map(([f, v]) => [Buffer.from(f), Buffer.from(v)]) },
});

describe("the sweep's cheap re-read", () => {
  it("vouches only for values it saw whole", () => {
    expect(contentDigest(str("token"), 256, 20)).not.toBeNull();
    expect(contentDigest(str("x".repeat(256)), 256, 20)).toBeNull(); // as long as the prefix read: maybe longer
    expect(contentDigest(str("token", 5000, 900), 256, 20)).toBeNull(); // a cut prefix
    expect(contentDigest(hash([["uuid:1", "1"]], 3), 256, 20)).toBeNull(); // more fields than the page
    expect(contentDigest({ key, type: "stream", pttl: -1 }, 256, 20)).toBeNull();
    const zset: KeySample = { key, type: "zset", pttl: 1, zset: { length: 20, members: [] } };
    expect(contentDigest(zset, 256, 20)).toBeNull();
  });

  it("tells apart type, content and field boundaries", () => {
    const d = (s: KeySample) => contentDigest(s, 256, 20);
    expect(d(str("token-A"))).toBe(d(str("token-A", 10)));
    expect(d(str("token-A"))).not.toBe(d(str("token-B")));
    expect(d(hash([["ab", "c"]]))).not.toBe(d(hash([["a", "bc"]])));
    const list: KeySample = { key, type: "list", pttl: 1, list: { length: 1, items: [Buffer.from("token-A")] } };
    expect(d(list)).not.toBe(d(str("token-A")));
  });

  it("counts a TTL change, a TTL added or removed, a gone key or an incomplete read as a change", () => {
    const known = { digest: contentDigest(str("t"), 256, 20)!, deadlineMs: 10_000 + 5000 + 1 };
    const at = 10_000;
    expect(unchangedSince(known, str("t", 5000), at, 256, 20)).toBe(true);
    expect(unchangedSince(known, str("t", 4950), at, 256, 20)).toBe(true); // round-trip drift
    expect(unchangedSince(known, str("t", 6000), at, 256, 20)).toBe(false); // renewed
    expect(unchangedSince(known, str("t", 3000), at, 256, 20)).toBe(false); // shortened
    expect(unchangedSince(known, str("t", -1), at, 256, 20)).toBe(false); // PERSIST
    expect(unchangedSince(known, str("", -2), at, 256, 20)).toBe(false); // gone
    expect(unchangedSince(known, null, at, 256, 20)).toBe(false); // WRONGTYPE or a page that did not end
    expect(unchangedSince(known, str("u", 5000), at, 256, 20)).toBe(false);
    const noTtl = { digest: known.digest, deadlineMs: undefined };
    expect(unchangedSince(noTtl, str("t", -1), at, 256, 20)).toBe(true);
    expect(unchangedSince(noTtl, str("t", 5000), at, 256, 20)).toBe(false);
  });
});
