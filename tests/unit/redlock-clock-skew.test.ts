import { describe, expect, it } from "vitest";
import { estimateOffset, groupSkew, parseTimeReply, skewHazard } from "../../agent/sources/redlock/clock-skew";

describe("parseTimeReply", () => {
  it.each([
    { name: "ioredis strings", reply: ["1732870123", "456789"], want: 1732870123456.789 },
    { name: "numbers", reply: [1732870123, 5], want: 1732870123000.005 },
    { name: "zero micros", reply: ["1732870123", "0"], want: 1732870123000 },
    { name: "not an array", reply: "1732870123", want: null },
    { name: "one element", reply: ["1732870123"], want: null },
    { name: "three elements", reply: ["1", "2", "3"], want: null },
    { name: "negative seconds", reply: ["-1", "0"], want: null },
    { name: "micros out of range", reply: ["1732870123", "1000000"], want: null },
    { name: "hostile text", reply: ["1e9", "\u202e"], want: null },
    { name: "null entries", reply: [null, null], want: null },
  ])("$name", ({ reply, want }) => {
    const got = parseTimeReply(reply);
    if (want === null) expect(got).toBeNull();
    else expect(got).toBeCloseTo(want, 3);
  });
});

describe("estimateOffset", () => {
  it("assumes the node read its clock halfway through the round trip", () => {
    // Sent at 1000, received at 1010: the node's 1105 was read around 1005, so it runs 100 ms ahead, give or take 5.
    const o = estimateOffset({ serverMs: 1105, sentAtMs: 1000, receivedAtMs: 1010 })!;
    expect(o.offsetMs).toBe(100);
    expect(o.uncertaintyMs).toBeCloseTo(5.001, 6);
  });
  it("a node behind the agent has a negative offset", () => {
    expect(estimateOffset({ serverMs: 950, sentAtMs: 1000, receivedAtMs: 1000 })!.offsetMs).toBe(-50);
  });
  it("rejects a reply received before it was sent (clock stepped) and non-numbers", () => {
    expect(estimateOffset({ serverMs: 1000, sentAtMs: 1000, receivedAtMs: 999 })).toBeNull();
    expect(estimateOffset({ serverMs: Number.NaN, sentAtMs: 1000, receivedAtMs: 1001 })).toBeNull();
  });
});

describe("groupSkew", () => {
  it("needs two nodes", () => {
    expect(groupSkew([])).toBeNull();
    expect(groupSkew([{ node: "a", offsetMs: 5, uncertaintyMs: 0 }])).toBeNull();
  });
  it("is the spread between the fastest and slowest clock, less both uncertainties for the lower bound", () => {
    const s = groupSkew([
      { node: "a", offsetMs: 3, uncertaintyMs: 1 },
      { node: "b", offsetMs: -20, uncertaintyMs: 2 },
      { node: "c", offsetMs: 40, uncertaintyMs: 4 },
    ]);
    expect(s).toEqual({ skewMs: 60, lowerBoundMs: 54, ahead: "c", behind: "b" });
  });
  it("never reports a negative lower bound", () => {
    const s = groupSkew([
      { node: "a", offsetMs: 0, uncertaintyMs: 10 },
      { node: "b", offsetMs: 1, uncertaintyMs: 10 },
    ]);
    expect(s!.lowerBoundMs).toBe(0);
  });
});

describe("skewHazard", () => {
  const skew = (lowerBoundMs: number) => ({ skewMs: lowerBoundMs, lowerBoundMs, ahead: "a", behind: "b" });
  it.each([
    { lower: 0, drift: 102, want: null },
    { lower: 50.9, drift: 102, want: null },
    { lower: 51, drift: 102, want: "warning" },
    { lower: 101.9, drift: 102, want: "warning" },
    { lower: 102, drift: 102, want: "critical" },
    { lower: 7, drift: 12, want: "warning" }, // a 1 s lease tolerates far less
  ])("$lower ms against $drift ms allowance: $want", ({ lower, drift, want }) => {
    expect(skewHazard(skew(lower), drift)?.severity ?? null).toBe(want);
  });
  it("nothing without a skew or an allowance", () => {
    expect(skewHazard(null, 102)).toBeNull();
    expect(skewHazard(skew(500), null)).toBeNull();
  });
  it("names the nodes", () => {
    expect(skewHazard(skew(200), 102)!.message).toContain("a runs ahead of b");
  });
});
