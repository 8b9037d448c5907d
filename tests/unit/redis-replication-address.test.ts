import { describe, expect, it } from "vitest";
import { loadAgentConfig } from "../../agent/config";
import { nodeId, nodeUrl, parseAddressMap, parseHostPort } from "../../agent/sources/redis/node-address";

describe("parseHostPort", () => {
  const cases: Array<[string, ReturnType<typeof parseHostPort>]> = [
    ["127.0.0.1:6379", { host: "127.0.0.1", port: 6379 }],
    ["redis-0.redis.svc:6380", { host: "redis-0.redis.svc", port: 6380 }],
    ["[::1]:6390", { host: "::1", port: 6390 }],
    ["::1:6390", null],
    ["127.0.0.1", null],
    ["127.0.0.1:0", null],
    ["127.0.0.1:65536", null],
    ["a b:1", null],
    ["user@host:1", null],
    ["", null],
  ];
  for (const [text, want] of cases) it(JSON.stringify(text), () => expect(parseHostPort(text)).toEqual(want));
});

describe("REDIS_ADDRESS_MAP", () => {
  it("maps announced addresses to host:port or full URLs", () => {
    const map = parseAddressMap("REDIS_ADDRESS_MAP", [
      "10.0.0.7:6379=127.0.0.1:16379",
      "[fd00::7]:6379=redis://:pw@127.0.0.1:16380/0",
    ]);
    expect([...map]).toEqual([
      ["10.0.0.7:6379", "127.0.0.1:16379"],
      ["[fd00::7]:6379", "redis://:pw@127.0.0.1:16380/0"],
    ]);
  });

  const bad: Array<[string, RegExp]> = [
    ["10.0.0.7:6379", /expected announced=reachable/],
    ["=127.0.0.1:1", /expected announced=reachable/],
    ["10.0.0.7=127.0.0.1:1", /is not host:port/],
    ["10.0.0.7:6379=nowhere", /neither host:port nor a redis:\/\/ URL/],
    ["10.0.0.7:6379=redis://", /is not a redis:\/\/ URL/],
    ["10.0.0.7:6379=http://127.0.0.1:1", /neither host:port/],
  ];
  for (const [entry, why] of bad) {
    it(`refuses ${JSON.stringify(entry)} with a line naming the variable`, () => {
      expect(() => parseAddressMap("REDIS_ADDRESS_MAP", [entry])).toThrow(/^REDIS_ADDRESS_MAP: /);
      expect(() => parseAddressMap("REDIS_ADDRESS_MAP", [entry])).toThrow(why);
    });
  }

  it("refuses an address mapped twice", () => {
    expect(() => parseAddressMap("REDIS_ADDRESS_MAP", ["1.1.1.1:1=2.2.2.2:2", "1.1.1.1:1=3.3.3.3:3"])).toThrow(
      /mapped twice/,
    );
  });

  it("is read by the agent config with the other Redis settings", () => {
    const env = { AGENT_TOKEN: "t", REDIS_ADDRESS_MAP: "10.0.0.7:6379=127.0.0.1:16379" };
    const c = loadAgentConfig(env);
    expect(c.redisAddressMap.get("10.0.0.7:6379")).toBe("127.0.0.1:16379");
    expect(c.replicaCheck).toBe(true);
    expect(c.clusterRefreshMs).toBe(10_000);
    expect(loadAgentConfig({ ...env, REDIS_REPLICA_CHECK: "off" }).replicaCheck).toBe(false);
    expect(() => loadAgentConfig({ ...env, REDIS_REPLICA_CHECK: "maybe" })).toThrow(/REDIS_REPLICA_CHECK/);
    expect(() => loadAgentConfig({ ...env, REDIS_CLUSTER_REFRESH_MS: "10" })).toThrow(/REDIS_CLUSTER_REFRESH_MS/);
    expect(() => loadAgentConfig({ ...env, REDIS_ADDRESS_MAP: "x" })).toThrow(/REDIS_ADDRESS_MAP/);
  });
});

describe("nodeUrl and nodeId", () => {
  const map = new Map([
    ["10.0.0.7:6379", "127.0.0.1:16379"],
    ["10.0.0.8:6379", "rediss://other:secret@127.0.0.1:16380/0"],
  ]);
  const base = "redis://agent:s3cret@127.0.0.1:6379/2";

  it("dials an announced address with the watched node's scheme, credentials and database", () => {
    expect(nodeUrl("127.0.0.1:6380", base, map)).toBe("redis://agent:s3cret@127.0.0.1:6380/2");
    expect(nodeUrl("[::1]:6380", base, map)).toBe("redis://agent:s3cret@[::1]:6380/2");
  });

  it("dials the mapped address instead, or the mapped URL as it is", () => {
    expect(nodeUrl("10.0.0.7:6379", base, map)).toBe("redis://agent:s3cret@127.0.0.1:16379/2");
    expect(nodeUrl("10.0.0.8:6379", base, map)).toBe("rediss://other:secret@127.0.0.1:16380/0");
  });

  it("shows a node without credentials or database", () => {
    expect(nodeId("10.0.0.7:6379", base)).toBe("redis://10.0.0.7:6379");
    expect(nodeId("10.0.0.7:6379", "rediss://h:1/0")).toBe("rediss://10.0.0.7:6379");
  });
});
