import { describe, expect, it } from "vitest";
import { DEFAULT_LOCK_PATTERNS, loadAgentConfig } from "../../agent/config";
import { configError } from "../harness/config-error";
import { loadDashboardConfig } from "../../lib/server/config";

const base = { AGENT_TOKEN: "t".repeat(24) };

describe("agent configuration", () => {
  it("uses the contract's defaults", () => {
    const c = loadAgentConfig(base);
    expect(c.redis).toEqual([{ id: "redis://127.0.0.1:6379/0", url: "redis://127.0.0.1:6379", db: 0 }]);
    expect(c.lockPatterns).toEqual(DEFAULT_LOCK_PATTERNS);
    expect(c.pollIntervalMs).toBe(1000);
    expect(c.dashboardUrl).toBe("http://127.0.0.1:3000");
  });

  it("follows PORT for the default dashboard URL", () => {
    expect(loadAgentConfig({ ...base, PORT: "4100" }).dashboardUrl).toBe("http://127.0.0.1:4100");
  });

  it("never shows a Redis password in the source id", () => {
    const c = loadAgentConfig({ ...base, REDIS_URLS: "redis://:s3cret@127.0.0.1:7000/2, rediss://u:p@127.0.0.1:7001" });
    expect(c.redis.map((r) => r.id)).toEqual(["redis://127.0.0.1:7000/2", "rediss://127.0.0.1:7001/0"]);
    expect(c.redis[0]!.url).toContain("s3cret");
  });

  it("an empty REDIS_URLS watches no Redis (for ZooKeeper-only agents)", () => {
    expect(loadAgentConfig({ ...base, REDIS_URLS: "" }).redis).toEqual([]);
  });

  const bad: Array<[string, Record<string, string>, string]> = [
    ["REDIS_URLS", { REDIS_URLS: "127.0.0.1:6379" }, "expected redis://"],
    ["REDIS_URLS", { REDIS_URLS: "http://127.0.0.1:6379" }, "expected redis://"],
    ["REDIS_URLS", { REDIS_URLS: "redis://127.0.0.1:6379/x" }, "database must be a number"],
    ["REDIS_URLS", { REDIS_URLS: "redis://127.0.0.1:6379,redis://127.0.0.1:6379/0" }, "listed twice"],
    ["POLL_INTERVAL_MS", { POLL_INTERVAL_MS: "fast" }, "whole number"],
    ["POLL_INTERVAL_MS", { POLL_INTERVAL_MS: "5" }, "between 100"],
    ["SCAN_COUNT", { SCAN_COUNT: "1e3" }, "whole number"],
    ["LOCK_PATTERNS", { LOCK_PATTERNS: " , " }, "names no pattern"],
    ["DASHBOARD_URL", { DASHBOARD_URL: "ftp://x" }, "http://"],
    ["AGENT_ID", { AGENT_ID: "bad id!" }, "letters"],
  ];
  for (const [variable, env, problem] of bad) {
    it(`rejects ${variable}=${JSON.stringify(Object.values(env)[0])} naming the variable`, () => {
      const err = configError(() => loadAgentConfig({ ...base, ...env }));
      expect(err.variable).toBe(variable);
      expect(err.message).toContain(problem);
      expect(err.message.split("\n")).toHaveLength(1);
    });
  }

  it("requires an agent token", () => {
    expect(configError(() => loadAgentConfig({})).variable).toBe("AGENT_TOKEN");
  });
});

describe("dashboard configuration", () => {
  it("defaults to loopback, port 3000 and the SQLite file", () => {
    expect(loadDashboardConfig(base)).toMatchObject({
      port: 3000,
      host: "127.0.0.1",
      databaseUrl: "file:./data/lockscope.db",
      ui: true,
    });
  });
  it("selects PostgreSQL for a postgresql:// or postgres:// DATABASE_URL", () => {
    for (const url of ["postgresql://root@127.0.0.1:5432/lockscope", "postgres://127.0.0.1/x"]) {
      expect(loadDashboardConfig({ ...base, DATABASE_URL: url })).toMatchObject({
        databaseUrl: url,
        databaseProvider: "postgresql",
      });
    }
    expect(loadDashboardConfig(base).databaseProvider).toBe("sqlite");
  });
  it("rejects a DATABASE_URL of another kind, naming the variable and without echoing a password", () => {
    const err = configError(() => loadDashboardConfig({ ...base, DATABASE_URL: "mysql://u:hunter2@127.0.0.1/x" }));
    expect(err.variable).toBe("DATABASE_URL");
    expect(err.message).toContain("postgresql://");
    expect(err.message).not.toContain("hunter2");
    expect(configError(() => loadDashboardConfig({ ...base, DATABASE_URL: "postgresql://" })).variable).toBe(
      "DATABASE_URL",
    );
  });
  it("reads FANOUT_REDIS_URL and the leader lease, refusing anything but a redis:// URL", () => {
    expect(loadDashboardConfig(base)).toMatchObject({ fanoutRedisUrl: null, leaderLeaseMs: 10_000 });
    expect(
      loadDashboardConfig({ ...base, FANOUT_REDIS_URL: "redis://127.0.0.1:6390", LEADER_LEASE_MS: "3000" }),
    ).toMatchObject({ fanoutRedisUrl: "redis://127.0.0.1:6390", leaderLeaseMs: 3000 });
    expect(configError(() => loadDashboardConfig({ ...base, FANOUT_REDIS_URL: "127.0.0.1:6390" })).variable).toBe(
      "FANOUT_REDIS_URL",
    );
    expect(configError(() => loadDashboardConfig({ ...base, LEADER_LEASE_MS: "10" })).variable).toBe("LEADER_LEASE_MS");
  });
  it("rejects a short agent token", () => {
    expect(configError(() => loadDashboardConfig({ AGENT_TOKEN: "short" })).message).toContain("at least 16");
  });
  it("rejects a port out of range", () => {
    expect(configError(() => loadDashboardConfig({ ...base, PORT: "70000" })).variable).toBe("PORT");
  });
  it("marks the session cookie Secure when PUBLIC_URL is https, unless COOKIE_SECURE says otherwise", () => {
    expect(loadDashboardConfig(base).secureCookies).toBe(false);
    expect(loadDashboardConfig({ ...base, PUBLIC_URL: "http://lockscope.internal" }).secureCookies).toBe(false);
    expect(loadDashboardConfig({ ...base, PUBLIC_URL: "https://lockscope.example" }).secureCookies).toBe(true);
    expect(
      loadDashboardConfig({ ...base, PUBLIC_URL: "https://x.example", COOKIE_SECURE: "false" }).secureCookies,
    ).toBe(false);
    expect(loadDashboardConfig({ ...base, COOKIE_SECURE: "true" }).secureCookies).toBe(true);
  });
});
