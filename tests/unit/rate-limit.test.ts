import { describe, expect, it } from "vitest";
import { RateLimiter } from "../../lib/server/rate-limit";

describe("RateLimiter", () => {
  it("allows `limit` attempts per window per key, then says how long to wait", () => {
    let now = 0;
    const r = new RateLimiter(3, 60_000, () => now);
    expect([r.take("op"), r.take("op"), r.take("op")]).toEqual([0, 0, 0]);
    now = 10_000;
    expect(r.take("op")).toBe(50_000);
    expect(r.take("other")).toBe(0);
    now = 60_000;
    expect(r.take("op")).toBe(0);
  });
});
