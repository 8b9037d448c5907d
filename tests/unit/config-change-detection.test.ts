import { describe, expect, it } from "vitest";
import { loadAgentConfig } from "../../agent/config";
import { configError } from "../harness/config-error";

const base = { AGENT_TOKEN: "t".repeat(24) };

describe("Redis change detection settings", () => {
  it("defaults to tracking, a one-minute sweep, 0.7% of one Redis core and SCAN steps of about 250 µs", () => {
    const c = loadAgentConfig(base);
    expect(c).toMatchObject({
      changeDetection: "track",
      sweepMs: 60_000,
      serverTimeBudgetPercent: 0.7,
      scanStepUsec: 250,
    });
    expect(loadAgentConfig({ ...base, REDIS_SCAN_STEP_US: "0" }).scanStepUsec).toBe(0);
  });

  it("accepts poll, a fractional budget and 0 for unlimited", () => {
    const c = loadAgentConfig({ ...base, REDIS_CHANGE_DETECTION: "poll", REDIS_SERVER_TIME_BUDGET_PERCENT: "0.5" });
    expect(c).toMatchObject({ changeDetection: "poll", serverTimeBudgetPercent: 0.5 });
    expect(loadAgentConfig({ ...base, REDIS_SERVER_TIME_BUDGET_PERCENT: "0" }).serverTimeBudgetPercent).toBe(0);
  });

  it.each([
    ["REDIS_CHANGE_DETECTION", "notify", /expected one of track, poll/],
    ["REDIS_SERVER_TIME_BUDGET_PERCENT", "1%", /expected a percentage/],
    ["REDIS_SERVER_TIME_BUDGET_PERCENT", "-1", /expected a percentage/],
    ["REDIS_SERVER_TIME_BUDGET_PERCENT", "150", /between 0 and 100/],
    ["REDIS_SWEEP_MS", "10", /between 1000 and/],
    ["REDIS_SCAN_STEP_US", "-5", /between 0 and/],
    ["REDIS_SCAN_STEP_US", "fast", /integer|number/],
  ])("%s=%s stops the agent with one line naming it", (name, value, message) => {
    const line = configError(() => loadAgentConfig({ ...base, [name]: value })).message;
    expect(line).toContain(name);
    expect(line).toMatch(message);
  });
});
