import { describe, expect, it } from "vitest";
import { keyPattern, MAX_PATTERN_LENGTH } from "../../lib/contract/key-pattern";

describe("keyPattern", () => {
  it.each([
    ["lock:order:12345", "lock:order:*"],
    ["lock:order:7", "lock:order:*"],
    ["lock:user-42:cart", "lock:user-*:cart"],
    ["job-lock:default:report", "job-lock:default:report"],
    ["mutex:9f2c1c6e-4f7e-4d7a-9a34-1d2b3c4d5e6f", "mutex:*"],
    ["redisson_lock__channel:{9F2C1C6E-4F7E-4D7A-9A34-1D2B3C4D5E6F}", "redisson_lock__channel:{*}"],
    ["lock:5f3a9b2c7d1e", "lock:*"],
    ["lock:a1b2c3d4e5f6a7b8c9d0:part", "lock:*:part"],
    // A hex-looking word without digits is a name, not an id.
    ["lock:deadbeefcafe", "lock:deadbeefcafe"],
    ["/locks/job/_c_3f2a1b2c-1111-2222-3333-444455556666-lock-0000000007", "/locks/job/_c_*-lock-*"],
    ["lock:2024-01-31:batch", "lock:*-*-*:batch"],
    ["", ""],
  ])("%s -> %s", (key, pattern) => {
    expect(keyPattern(key)).toBe(pattern);
  });

  it("bounds a hostile name", () => {
    const p = keyPattern(`lock:${"x".repeat(5000)}`);
    expect(p.length).toBe(MAX_PATTERN_LENGTH);
    expect(p.endsWith("…")).toBe(true);
  });
});
