import { describe, expect, it } from "vitest";
import { mergeInto, type TrackerOutput } from "../../agent/core/tracker";

/**
 * Outputs of several sources (cluster masters, ZooKeeper parents, Redlock keys, the agent's sources) are merged
 * into one per poll. A first poll of a large source has more items than one call takes as arguments, so the merge
 * must not spread them into push(): with `push(...items)` this test throws "Maximum call stack size exceeded".
 */
describe("mergeInto", () => {
  it("merges outputs of 200,000 items each, in order", () => {
    const big = (tag: string): TrackerOutput => ({
      events: [],
      upserts: [],
      removed: Array.from({ length: 200_000 }, (_, i) => `${tag}${i}`),
    });
    const out: TrackerOutput = { events: [], upserts: [], removed: ["first"] };
    mergeInto(out, big("a"));
    mergeInto(out, big("b"));
    expect(out.removed).toHaveLength(400_001);
    expect([out.removed[0], out.removed[1], out.removed[200_001], out.removed[400_000]]).toEqual([
      "first",
      "a0",
      "b0",
      "b199999",
    ]);
  });
});
