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

  it("wait() says how long a key must wait without counting an attempt", () => {
    let now = 0;
    const r = new RateLimiter(2, 60_000, () => now);
    expect(r.wait("ip")).toBe(0);
    r.take("ip");
    expect(r.wait("ip")).toBe(0);
    r.take("ip");
    now = 15_000;
    expect([r.wait("ip"), r.wait("ip")]).toEqual([45_000, 45_000]);
    now = 60_000;
    expect(r.wait("ip")).toBe(0);
  });
});
