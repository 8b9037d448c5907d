import { describe, expect, it } from "vitest";
import { holderLabel, holderValue, unknownLockMessage, waitersNote } from "../../components/locks/detail-labels";

const NOW = Date.parse("2026-12-01T10:00:00.000Z");

describe("lock detail labels: plain words, not internal names", () => {
  it.each([
    ["permitsHeld", "permits held"],
    ["permitsTotal", "permits in total"],
    ["nextLeaseEnds", "next lease ends"],
    ["clientId", "client id"],
    ["lockTimeoutMs", "lock timeout"],
    ["some_snake_name", "some snake name"],
    ["kebab-name", "kebab name"],
    ["host", "host"],
  ])("%s → %s", (key, label) => {
    expect(holderLabel(key)).toBe(label);
  });

  it("shows times in the chosen zone with how long ago, never epoch milliseconds", () => {
    expect(holderValue("acquiredAt", "2026-12-01T09:55:00.000Z", "utc", NOW)).toBe("2026-12-01 09:55:00 UTC (5 m ago)");
    expect(holderValue("acquiredAt", Date.parse("2026-12-01T09:59:30.000Z"), "utc", NOW)).toBe(
      "2026-12-01 09:59:30 UTC (30 s ago)",
    );
    expect(holderValue("nextLeaseEnds", "2026-12-01T10:00:34.000Z", "utc", NOW)).toBe(
      "2026-12-01 10:00:34 UTC (in 34 s)",
    );
  });

  it("shows durations, yes/no and everything else as it is", () => {
    expect(holderValue("lockTimeoutMs", 12_500, "utc", NOW)).toBe("12s");
    expect(holderValue("fair", true, "utc", NOW)).toBe("yes");
    expect(holderValue("permitsHeld", 2, "utc", NOW)).toBe("2");
    // A count under a time-like name that is no epoch is not turned into a 1970 date.
    expect(holderValue("queuedAt", 57, "utc", NOW)).toBe("57");
    expect(holderValue("host", "2026-not-a-time", "utc", NOW)).toBe("2026-not-a-time");
  });
});

describe("waiters note instead of an empty chart", () => {
  it("plain Redis and Redlock locks say their clients retry", () => {
    expect(waitersNote({ backend: "redis", rule: "generic-string", waiters: [] }, 0)).toBe(
      "No waiters are visible for plain Redis locks (clients retry).",
    );
    expect(waitersNote({ backend: "redlock", waiters: [] }, 0)).toMatch(/Redlock locks \(clients retry/);
  });
  it("no note where waiters are seen or measured", () => {
    expect(waitersNote({ backend: "redis", rule: "redisson-fair-lock", waiters: [] }, 0)).toBeNull();
    expect(waitersNote({ backend: "redis", waiters: [{ owner: "x" }] }, 0)).toBeNull();
    expect(waitersNote({ backend: "redis", waiters: [] }, 3)).toBeNull();
    expect(waitersNote({ backend: "zookeeper", waiters: [] }, 0)).toBeNull();
  });
});

it("an unknown id says the lock does not exist", () => {
  expect(unknownLockMessage("abc")).toMatch(/^No lock with id abc exists/);
});
