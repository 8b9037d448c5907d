import { describe, expect, it } from "vitest";
import type { SourceStatus } from "../../lib/contract/lock";
import { DEFAULT_ALERT_RULES, evaluateConditions } from "../../lib/server/alerts/rules";

const source = (hazards: SourceStatus["hazards"]): SourceStatus => ({
  id: "redis://127.0.0.1:1/0",
  kind: "redis",
  up: true,
  locks: 5,
  untracked: 7,
  agentId: "a1",
  hazards,
});

describe("source hazards as alerts", () => {
  const flood = { code: "too-many-locks", severity: "critical" as const, message: "12 lock keys seen, 5 shown" };

  it("too-many-locks on a source raises one alert on the source with the hazard's evidence", () => {
    expect(evaluateConditions([], [source([flood])], 0, DEFAULT_ALERT_RULES)).toEqual([
      {
        key: "too-many-locks:redis://127.0.0.1:1/0",
        rule: "too-many-locks",
        severity: "critical",
        lockId: null,
        backend: "redis",
        source: "redis://127.0.0.1:1/0",
        resource: null,
        message: "12 lock keys seen, 5 shown",
      },
    ]);
  });

  it("other source hazards raise nothing, and the rule can be switched off", () => {
    const other = { code: "empty-parents", severity: "warning" as const, message: "m" };
    expect(evaluateConditions([], [source([other])], 0, DEFAULT_ALERT_RULES)).toEqual([]);
    const off = { ...DEFAULT_ALERT_RULES, disabled: new Set(["too-many-locks"]) };
    expect(evaluateConditions([], [source([flood])], 0, off)).toEqual([]);
  });
});
