import { describe, expect, it } from "vitest";
import { DEFAULT_URL, parseArgs, parseSince, UsageError } from "../../cli/args";

const NOW = Date.parse("2026-12-01T10:00:00Z");
const parse = (argv: string[], env: Record<string, string> = {}) => parseArgs(argv, env, NOW);
const usage = (argv: string[], env: Record<string, string> = {}) => {
  try {
    parse(argv, env);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(" ")}`);
};

describe("lockscope command line parsing", () => {
  it("reads the dashboard and token from the environment, flags winning", () => {
    expect(parse(["locks"])).toEqual({ command: { name: "locks" }, url: DEFAULT_URL, token: null, json: false });
    const env = { LOCKSCOPE_URL: "http://127.0.0.1:4000/", LOCKSCOPE_TOKEN: "env-token" };
    expect(parse(["locks"], env)).toMatchObject({ url: "http://127.0.0.1:4000", token: "env-token" });
    expect(parse(["--url", "http://[::1]:5000", "locks", "--token=flag-token"], env)).toMatchObject({
      url: "http://[::1]:5000",
      token: "flag-token",
    });
  });

  it("parses each command's flags in both --flag value and --flag=value forms", () => {
    expect(parse(["locks", "--backend", "redis", "--hazard=no-ttl", "--query", "orders", "--json"])).toMatchObject({
      command: { name: "locks", backend: "redis", hazard: "no-ttl", query: "orders" },
      json: true,
    });
    expect(parse(["lock", "abc_DEF-123"]).command).toEqual({ name: "lock", id: "abc_DEF-123" });
    expect(parse(["release", "id1", "--owner", "w-42", "--reason", "crashed at 03:10", "--dry-run"]).command).toEqual({
      name: "release",
      id: "id1",
      owner: "w-42",
      reason: "crashed at 03:10",
      dryRun: true,
      yes: false,
    });
    expect(parse(["alerts", "--state", "open"]).command).toEqual({ name: "alerts", state: "open" });
    expect(parse(["events", "--resource", "lock:a", "--since", "15m", "--limit", "5"]).command).toEqual({
      name: "events",
      resource: "lock:a",
      since: "2026-12-01T09:45:00.000Z",
      limit: 5,
    });
    expect(parse(["watch", "--backend=zookeeper"]).command).toEqual({ name: "watch", backend: "zookeeper" });
    expect(parse(["--help"]).command).toEqual({ name: "help" });
    expect(parse(["release", "-h"]).command).toEqual({ name: "help" });
  });

  it("says in one line what is wrong with a bad command line", () => {
    expect(usage([])).toBe("no command given; see lockscope --help");
    expect(usage(["lokcs"])).toBe('unknown command "lokcs"; see lockscope --help');
    expect(usage(["locks", "--owner", "x"])).toBe("unknown flag --owner for locks; see lockscope --help");
    expect(usage(["locks", "--backend", "etcd"])).toBe(
      '--backend must be one of redis, redlock, zookeeper, postgres, mysql (got "etcd")',
    );
    expect(usage(["locks", "--backend"])).toBe("--backend needs a value");
    expect(usage(["locks", "--backend", "--json"])).toBe("--backend needs a value");
    expect(usage(["locks", "--json=yes"])).toBe("--json takes no value");
    expect(usage(["locks", "--query", "a", "--query", "b"])).toBe("--query given twice");
    expect(usage(["locks", "extra"])).toBe('unexpected argument "extra" for locks');
    expect(usage(["lock"])).toBe("lock needs a lock id: lockscope lock <id>");
    expect(usage(["lock", "a/b"])).toBe('"a/b" is not a lock id (A-Z a-z 0-9 _ -, see lockscope locks)');
    expect(usage(["lock", "a", "b"])).toBe('unexpected argument "b" for lock');
    expect(usage(["release", "id1", "--reason", "stuck job"])).toMatch(/^release needs --owner/);
    expect(usage(["release", "id1", "--owner", "w", "--reason", "x"])).toMatch(/^release needs --reason/);
    expect(usage(["alerts", "--state", "closed"])).toBe(
      '--state must be one of open, acknowledged, resolved (got "closed")',
    );
    expect(usage(["events", "--limit", "0"])).toBe('--limit must be a whole number from 1 to 1000 (got "0")');
    expect(usage(["events", "--since", "yesterday"])).toMatch(/^--since must be an ISO time/);
    expect(usage(["watch", "--json"])).toBe("watch draws a live table; --json is for the other commands");
    expect(usage(["locks"], { LOCKSCOPE_URL: "127.0.0.1:3000" })).toBe('LOCKSCOPE_URL is not a URL: "127.0.0.1:3000"');
    expect(usage(["locks", "--url", "ftp://127.0.0.1"])).toBe("--url must be an http:// or https:// URL (got ftp:)");
    expect(usage(["locks", "--url", "http://u:p@127.0.0.1"])).toBe("--url must not carry credentials; use --token");
  });

  it("reads --since as an ISO time, epoch milliseconds or a duration back from now", () => {
    expect(parseSince("2026-11-30T08:00:00Z", NOW)).toBe("2026-11-30T08:00:00.000Z");
    expect(parseSince(String(NOW - 1000), NOW)).toBe("2026-12-01T09:59:59.000Z");
    expect(parseSince("2h", NOW)).toBe("2026-12-01T08:00:00.000Z");
    expect(parseSince("7d", NOW)).toBe("2026-11-24T10:00:00.000Z");
    expect(() => parseSince("-5m", NOW)).toThrow(UsageError);
    expect(() => parseSince("2026-13-45", NOW)).toThrow(UsageError);
  });
});
