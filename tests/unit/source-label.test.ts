import { describe, expect, it } from "vitest";
import { sourceLabel } from "../../components/locks/source-label";

describe("sourceLabel", () => {
  it.each([
    // [what Lock.source holds, host, port, rest, full]
    ["redis://127.0.0.1:6379/0", "127.0.0.1", ":6379", "", "redis://127.0.0.1:6379/0"],
    ["redis://cache.internal:6380/3", "cache.internal", ":6380", "/3", "redis://cache.internal:6380/3"],
    ["rediss://redis-1.internal:6380/0", "redis-1.internal", ":6380", "", "rediss://redis-1.internal:6380/0"],
    // A Redis Cluster master (nodeId of the announced address, database 0).
    ["redis://127.0.0.1:7001/0", "127.0.0.1", ":7001", "", "redis://127.0.0.1:7001/0"],
    ["redis://[::1]:6379/0", "[::1]", ":6379", "", "redis://[::1]:6379/0"],
    // A cluster node announced as a bare IPv6 address: the port is after the last colon.
    ["redis://::1:7002/0", "::1", ":7002", "", "redis://::1:7002/0"],
    ["postgresql://127.0.0.1:5432", "127.0.0.1", ":5432", "", "postgresql://127.0.0.1:5432"],
    ["mysql://db.example.internal:3306", "db.example.internal", ":3306", "", "mysql://db.example.internal:3306"],
    ["zookeeper://127.0.0.1:2181", "127.0.0.1", ":2181", "", "zookeeper://127.0.0.1:2181"],
    [
      "zookeeper://zk1:2181,zk2:2181,zk3:2181/locks",
      "zk1",
      ":2181",
      "/locks +2",
      "zookeeper://zk1:2181,zk2:2181,zk3:2181/locks",
    ],
    // A Redlock group is named, not addressed.
    ["default", "default", "", "", "default"],
    ["orders-group", "orders-group", "", "", "orders-group"],
  ])("%s", (source, host, port, rest, full) => {
    expect(sourceLabel(source)).toEqual({ host, port, rest, full });
  });

  it("never shows credentials or a query", () => {
    for (const s of [
      "redis://default:s3cret@10.0.0.1:6379/0",
      "rediss://:s3cret@cache:6380/0?tls=1",
      "postgresql://app:s3cret@db:5432",
      "mysql://root:s3cret@db:3306#x",
    ]) {
      const l = sourceLabel(s);
      const shown = `${l.host}${l.port}${l.rest}`;
      expect(`${shown} ${l.full}`).not.toContain("s3cret");
      expect(`${shown} ${l.full}`).not.toContain("@");
      expect(`${shown} ${l.full}`).not.toMatch(/[?#]/);
      expect(shown).not.toMatch(/:\/\//);
      expect(l.port).toMatch(/^:\d+$/);
    }
  });

  it("keeps odd values whole rather than guessing", () => {
    expect(sourceLabel("")).toEqual({ host: "", port: "", rest: "", full: "" });
    expect(sourceLabel("redis://")).toEqual({ host: "", port: "", rest: "", full: "" });
    expect(sourceLabel("redis://host-without-port/0").port).toBe("");
    expect(sourceLabel("a:b:c").host).toBe("a:b:c");
  });
});
