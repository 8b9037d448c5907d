import { describe, expect, it } from "vitest";
import { formatTime, parseZoneChoice, relativeTime, zoneStorageKey } from "../../components/time/format-time";

const AT = "2026-12-01T09:04:05.250Z";

describe("formatTime: one format, the zone always named", () => {
  it("in UTC", () => {
    expect(formatTime(AT, "utc")).toBe("2026-12-01 09:04:05 UTC");
    expect(formatTime(Date.parse(AT), "utc")).toBe("2026-12-01 09:04:05 UTC");
  });

  it("in the browser's zone, with its name", () => {
    expect(formatTime(AT, "local", "Europe/Berlin")).toBe("2026-12-01 10:04:05 CET");
    expect(formatTime("2026-07-01T22:30:00Z", "local", "America/New_York")).toBe("2026-07-01 18:30:00 GMT-4");
  });

  it("missing or unreadable times are a dash", () => {
    expect(formatTime(null, "utc")).toBe("—");
    expect(formatTime("not a time", "local")).toBe("—");
  });
});

describe("relativeTime", () => {
  const now = Date.parse(AT);
  it("future and past, in the unit people think in", () => {
    expect(relativeTime(now + 34_500, now)).toBe("in 34 s");
    expect(relativeTime(now - 5 * 60_000 - 10, now)).toBe("5 m ago");
    expect(relativeTime(now + 2 * 3_600_000, now)).toBe("in 2 h");
    expect(relativeTime(now - 3 * 86_400_000, now)).toBe("3 d ago");
    expect(relativeTime(now + 200, now)).toBe("just now");
    expect(relativeTime("bad", now)).toBe("—");
  });
});

describe("the UTC toggle is remembered per user", () => {
  it("keys by user, reads only what it wrote", () => {
    expect(zoneStorageKey("alice")).not.toBe(zoneStorageKey("bob"));
    expect(parseZoneChoice("utc")).toBe("utc");
    expect(parseZoneChoice("local")).toBe("local");
    expect(parseZoneChoice(null)).toBe("local");
    expect(parseZoneChoice("<script>")).toBe("local");
  });
});
