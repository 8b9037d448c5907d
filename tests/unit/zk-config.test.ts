import { describe, expect, it } from "vitest";
import { ConfigError } from "../../lib/config/env";
import { loadZookeeperConfig, zkPathProblem } from "../../agent/sources/zookeeper/zk-config";

describe("loadZookeeperConfig", () => {
  it("returns null when ZK_CONNECT is not set or blank: ZooKeeper is not watched", () => {
    expect(loadZookeeperConfig({})).toBeNull();
    expect(loadZookeeperConfig({ ZK_CONNECT: "  " })).toBeNull();
  });

  it("applies the documented defaults", () => {
    const c = loadZookeeperConfig({ ZK_CONNECT: "127.0.0.1:2181" })!;
    expect(c).toMatchObject({
      connect: "127.0.0.1:2181",
      servers: [{ host: "127.0.0.1", port: 2181 }],
      chroot: "",
      sourceId: "zookeeper://127.0.0.1:2181",
      lockPaths: [],
      auth: null,
      discoveryMaxDepth: 4,
      discoveryMaxNodes: 5000,
      resyncMs: 30_000,
    });
  });

  const valid: Array<{ name: string; env: Record<string, string>; want: Record<string, unknown> }> = [
    {
      name: "ensemble with chroot",
      env: { ZK_CONNECT: "zk1:2181,zk2:2182,zk3/apps/locks" },
      want: {
        servers: [
          { host: "zk1", port: 2181 },
          { host: "zk2", port: 2182 },
          { host: "zk3", port: 2181 },
        ],
        chroot: "/apps/locks",
        sourceId: "zookeeper://zk1:2181,zk2:2182,zk3:2181/apps/locks",
      },
    },
    { name: "a lone trailing slash is no chroot", env: { ZK_CONNECT: "127.0.0.1:2181/" }, want: { chroot: "" } },
    {
      name: "lock paths, blanks dropped",
      env: { ZK_CONNECT: "h:1", ZK_LOCK_PATHS: " /ParentLock, ,/locks/orders " },
      want: { lockPaths: ["/ParentLock", "/locks/orders"] },
    },
    { name: "empty lock paths = discover", env: { ZK_CONNECT: "h:1", ZK_LOCK_PATHS: "" }, want: { lockPaths: [] } },
    {
      name: "digest auth, password with colons",
      env: { ZK_CONNECT: "h:1", ZK_AUTH: "ops:s3:cr:et" },
      want: { auth: { user: "ops", password: "s3:cr:et" } },
    },
    {
      name: "limits",
      env: { ZK_CONNECT: "h:1", ZK_DISCOVERY_MAX_DEPTH: "2", ZK_DISCOVERY_MAX_NODES: "100", ZK_RESYNC_MS: "5000" },
      want: { discoveryMaxDepth: 2, discoveryMaxNodes: 100, resyncMs: 5000 },
    },
  ];
  it.each(valid)("accepts $name", ({ env, want }) => {
    expect(loadZookeeperConfig(env)).toMatchObject(want);
  });

  const invalid: Array<{ name: string; env: Record<string, string>; variable: string }> = [
    { name: "port out of range", env: { ZK_CONNECT: "h:70000" }, variable: "ZK_CONNECT" },
    { name: "port not a number", env: { ZK_CONNECT: "h:abc" }, variable: "ZK_CONNECT" },
    { name: "empty server in list", env: { ZK_CONNECT: "h:1,,h2:2" }, variable: "ZK_CONNECT" },
    { name: "bracketed IPv6", env: { ZK_CONNECT: "[::1]:2181" }, variable: "ZK_CONNECT" },
    { name: "host with a space", env: { ZK_CONNECT: "bad host:2181" }, variable: "ZK_CONNECT" },
    { name: "chroot with empty segment", env: { ZK_CONNECT: "h:1/a//b" }, variable: "ZK_CONNECT" },
    { name: "chroot with ..", env: { ZK_CONNECT: "h:1/a/.." }, variable: "ZK_CONNECT" },
    { name: "relative lock path", env: { ZK_CONNECT: "h:1", ZK_LOCK_PATHS: "locks" }, variable: "ZK_LOCK_PATHS" },
    {
      name: "lock path with trailing slash",
      env: { ZK_CONNECT: "h:1", ZK_LOCK_PATHS: "/locks/" },
      variable: "ZK_LOCK_PATHS",
    },
    {
      name: "lock path with a control char",
      env: { ZK_CONNECT: "h:1", ZK_LOCK_PATHS: "/lo\u0001cks" },
      variable: "ZK_LOCK_PATHS",
    },
    { name: "duplicate lock path", env: { ZK_CONNECT: "h:1", ZK_LOCK_PATHS: "/a,/a" }, variable: "ZK_LOCK_PATHS" },
    { name: "auth without password", env: { ZK_CONNECT: "h:1", ZK_AUTH: "ops:" }, variable: "ZK_AUTH" },
    { name: "auth without colon", env: { ZK_CONNECT: "h:1", ZK_AUTH: "ops" }, variable: "ZK_AUTH" },
    { name: "depth zero", env: { ZK_CONNECT: "h:1", ZK_DISCOVERY_MAX_DEPTH: "0" }, variable: "ZK_DISCOVERY_MAX_DEPTH" },
    {
      name: "nodes not a number",
      env: { ZK_CONNECT: "h:1", ZK_DISCOVERY_MAX_NODES: "lots" },
      variable: "ZK_DISCOVERY_MAX_NODES",
    },
    { name: "resync too fast", env: { ZK_CONNECT: "h:1", ZK_RESYNC_MS: "10" }, variable: "ZK_RESYNC_MS" },
  ];
  it.each(invalid)("rejects $name with a ConfigError naming $variable", ({ env, variable }) => {
    let caught: unknown;
    try {
      loadZookeeperConfig(env);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
    expect((caught as ConfigError).message.startsWith(`${variable}: `)).toBe(true);
  });

  it("never puts credentials into the source id", () => {
    const c = loadZookeeperConfig({ ZK_CONNECT: "h:1", ZK_AUTH: "ops:secret" })!;
    expect(c.sourceId).not.toContain("secret");
  });
});

describe("zkPathProblem", () => {
  it.each([
    ["/", null],
    ["/a/b", null],
    ["/ünïcode/ok", null],
    ["a", "must start with /"],
    ["/a/", "must not end with /"],
    ["/a\u0000b", "contains a character ZooKeeper does not allow"],
    ["/a\ud800b", "contains a character ZooKeeper does not allow"],
    ["/a/./b", "has a . or .. segment"],
  ])("%j -> %j", (path, want) => {
    expect(zkPathProblem(path)).toBe(want);
  });
});
