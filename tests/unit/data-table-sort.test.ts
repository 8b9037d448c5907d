import { describe, expect, it } from "vitest";
import { sortAlerts } from "../../components/alerts/alert-view-model";
import { ariaSort, nextSort } from "../../components/ui/data-table";
import type { AlertView } from "../../lib/contract/alerts";

describe("sortable headers", () => {
  const col = { label: "Raised", sortKey: "raised" };
  it("carry aria-sort: none until sorted, then the direction; plain columns carry none at all", () => {
    expect(ariaSort("State", { key: "raised", desc: true })).toBeUndefined();
    expect(ariaSort(col, undefined)).toBe("none");
    expect(ariaSort(col, { key: "severity", desc: true })).toBe("none");
    expect(ariaSort(col, { key: "raised", desc: true })).toBe("descending");
    expect(ariaSort(col, { key: "raised", desc: false })).toBe("ascending");
  });
  it("a click flips the same column and starts another descending", () => {
    expect(nextSort(undefined, "raised")).toEqual({ key: "raised", desc: true });
    expect(nextSort({ key: "raised", desc: true }, "raised")).toEqual({ key: "raised", desc: false });
    expect(nextSort({ key: "raised", desc: false }, "severity")).toEqual({ key: "severity", desc: true });
  });
});

describe("alerts sort", () => {
  const a = (id: string, severity: AlertView["severity"], occurrences: number, raisedAt: string) =>
    ({ id, severity, occurrences, raisedAt }) as AlertView;
  const list = [a("x", "info", 3, "2026-12-01T10:00:00Z"), a("y", "critical", 1, "2026-12-01T09:00:00Z")];
  it("by severity, occurrences or time; no sort keeps the server's order", () => {
    expect(sortAlerts(list, { key: "severity", desc: true }).map((r) => r.id)).toEqual(["y", "x"]);
    expect(sortAlerts(list, { key: "occurrences", desc: true }).map((r) => r.id)).toEqual(["x", "y"]);
    expect(sortAlerts(list, { key: "raised", desc: false }).map((r) => r.id)).toEqual(["y", "x"]);
    expect(sortAlerts(list, undefined).map((r) => r.id)).toEqual(["x", "y"]);
  });
});
