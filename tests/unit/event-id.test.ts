import { describe, expect, it } from "vitest";
import { newEventId } from "../../agent/core/event-id";

describe("newEventId", () => {
  it("issues unique ids that sort in the order they were made, many per millisecond", () => {
    const ids = Array.from({ length: 20_000 }, () => newEventId());
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!, `id ${i}`).toBe(true);
    // What the dashboard accepts as an event id (lib/contract/validate.ts: 8 to 64 characters).
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
  });
});
