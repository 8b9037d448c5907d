import { describe, expect, it } from "vitest";
import { decodeEventCursor, encodeEventCursor, parseEventTypes } from "../../lib/server/event-cursor";

describe("event history cursor", () => {
  it("round-trips the last event's time and id", () => {
    const c = encodeEventCursor({ at: "2026-12-01T09:00:01.234Z", id: "ev-7" });
    expect(decodeEventCursor(c)).toEqual({ at: new Date("2026-12-01T09:00:01.234Z"), id: "ev-7" });
  });

  it.each([
    ["not base64 json", "%%%"],
    ["a number", Buffer.from("42").toString("base64url")],
    ["wrong shape", Buffer.from(JSON.stringify(["x", "y"])).toString("base64url")],
    ["empty id", Buffer.from(JSON.stringify([1, ""])).toString("base64url")],
    ["time out of range", Buffer.from(JSON.stringify([1e20, "a"])).toString("base64url")],
  ])("refuses %s with a clear error", (_name, raw) => {
    expect(decodeEventCursor(raw)).toMatch(/not a cursor this API gave out/);
  });
});

describe("type filter", () => {
  it("accepts known types, comma-separated", () => {
    expect(parseEventTypes("acquired, owner-changed")).toEqual(["acquired", "owner-changed"]);
    expect(parseEventTypes(null)).toBeUndefined();
    expect(parseEventTypes("")).toBeUndefined();
  });
  it("names the unknown type", () => {
    expect(parseEventTypes("acquired,stolen")).toMatch(/type stolen is unknown; known: acquired/);
  });
});
