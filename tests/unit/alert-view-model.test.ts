import { describe, expect, it } from "vitest";
import { evidenceLines, filterAlerts, NO_FILTER, ruleOptions } from "../../components/alerts/alert-view-model";
import type { AlertView } from "../../lib/contract/alerts";

const alert = (id: string, over: Partial<AlertView>): AlertView => ({
  id,
  key: id,
  rule: "no-ttl",
  severity: "critical",
  state: "open",
  lockId: "L1",
  backend: "redis",
  source: "s",
  resource: "r",
  message: "m",
  evidence: {},
  raisedAt: "2026-12-01T10:00:00.000Z",
  ackedAt: null,
  ackedBy: null,
  resolvedAt: null,
  ...over,
});

const alerts = [
  alert("a", {}),
  alert("b", { state: "acknowledged", rule: "held-too-long", severity: "warning" }),
  alert("c", { state: "resolved", rule: "no-ttl", severity: "warning" }),
];

describe("alerts page filters", () => {
  it("by state, rule and severity, together", () => {
    expect(filterAlerts(alerts, NO_FILTER).map((a) => a.id)).toEqual(["a", "b", "c"]);
    expect(filterAlerts(alerts, { ...NO_FILTER, state: "open" }).map((a) => a.id)).toEqual(["a"]);
    expect(filterAlerts(alerts, { ...NO_FILTER, rule: "no-ttl" }).map((a) => a.id)).toEqual(["a", "c"]);
    expect(filterAlerts(alerts, { ...NO_FILTER, rule: "no-ttl", severity: "warning" }).map((a) => a.id)).toEqual(["c"]);
  });
  it("offers the rules present, with counts", () => {
    expect(ruleOptions(alerts)).toEqual([
      { rule: "held-too-long", count: 1 },
      { rule: "no-ttl", count: 2 },
    ]);
  });
});

describe("evidence lines", () => {
  it("names the holder when raised and each recent event, takeovers as old → new", () => {
    const lines = evidenceLines(
      {
        lock: { owner: "driver-2", ttlMs: 1500 },
        events: [
          { type: "owner-changed", at: "T2", owner: "driver-2", previousOwner: "driver-1" },
          { type: "acquired", at: "T1", owner: "driver-1" },
        ],
      },
      (at) => `<${at}>`,
    );
    expect(lines).toEqual([
      "When raised: held by driver-2, 1.5 s left",
      "<T2> owner-changed driver-1 → driver-2",
      "<T1> acquired driver-1",
    ]);
  });
  it("skips what it cannot read instead of crashing", () => {
    expect(evidenceLines({ events: "nope", lock: 5 }, String)).toEqual([]);
    expect(evidenceLines({ events: [null, { type: 1 }, { type: "expired", at: "T" }] }, String)).toEqual(["T expired"]);
  });
});
