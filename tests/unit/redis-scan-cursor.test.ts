import { describe, expect, it } from "vitest";
import { hasRedisScanCursor } from "../../agent/sources/redis/redis-client";

/**
 * Which servers' SCAN may be walked as two halves at once (redis-source.ts, scanHalves): decided from INFO server,
 * and only for a server whose cursor is Redis's reversed-bit bucket cursor. Anything else gets one walk.
 */
const info = (...lines: string[]) => ["# Server", ...lines, ""].join("\r\n");
const RUN_ID = "run_id:4f2d8c0e7a9b1c3d5e6f708192a3b4c5d6e7f809";

describe("hasRedisScanCursor", () => {
  it("accepts Redis, Valkey and KeyDB themselves, standalone or in a cluster", () => {
    expect(hasRedisScanCursor(info("redis_version:7.0.15", "redis_mode:standalone", RUN_ID))).toBe(true);
    expect(hasRedisScanCursor(info("redis_version:7.0.15", "redis_mode:cluster", RUN_ID))).toBe(true);
    expect(
      hasRedisScanCursor(
        info("redis_version:7.2.4", "server_name:valkey", "valkey_version:8.0.1", "redis_mode:standalone", RUN_ID),
      ),
    ).toBe(true);
    expect(hasRedisScanCursor(info("redis_version:6.3.4", "server_name:KeyDB", "redis_mode:standalone", RUN_ID))).toBe(
      true,
    );
  });

  it("refuses another server, a proxy, a sentinel and an INFO it cannot read", () => {
    expect(
      hasRedisScanCursor(info("redis_version:7.4.0", "dragonfly_version:df-v1.25.0", "redis_mode:standalone", RUN_ID)),
    ).toBe(false);
    expect(
      hasRedisScanCursor(info("redis_version:7.0.15", "server_name:someproxy", "redis_mode:standalone", RUN_ID)),
    ).toBe(false);
    // A proxy answering for several servers: no run_id of its own.
    expect(hasRedisScanCursor(info("redis_version:6.2.0", "redis_mode:standalone"))).toBe(false);
    expect(hasRedisScanCursor(info("redis_version:7.0.15", "redis_mode:sentinel", RUN_ID))).toBe(false);
    expect(hasRedisScanCursor("")).toBe(false);
    expect(hasRedisScanCursor("\u0000\uffff".repeat(1000))).toBe(false);
  });
});
