import { describe, expect, it } from "vitest";
import { CYCLE_MS, frozenNodes } from "../../scripts/demo/freeze-plan";

describe("the demo's Redlock freeze plan (five nodes, quorum 3)", () => {
  it("goes from all up to one frozen (partial), two (at-risk), three (quorum lost), and back", () => {
    expect(frozenNodes(10_000, 5)).toEqual([]);
    expect(frozenNodes(35_000, 5)).toEqual([4]);
    expect(frozenNodes(45_000, 5)).toEqual([3, 4]);
    expect(frozenNodes(55_000, 5)).toEqual([2, 3, 4]);
    expect(frozenNodes(59_000, 5)).toEqual([]);
  });

  it("repeats every cycle, and never freezes a group too small for the story or at a nonsense time", () => {
    expect(frozenNodes(CYCLE_MS + 45_000, 5)).toEqual([3, 4]);
    expect(frozenNodes(45_000, 3)).toEqual([]);
    expect(frozenNodes(-1, 5)).toEqual([]);
    expect(frozenNodes(Number.NaN, 5)).toEqual([]);
  });
});
