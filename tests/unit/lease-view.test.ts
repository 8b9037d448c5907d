import { describe, expect, it } from "vitest";
import { holdStatus, leaseView, LEASE_ENDED_LABEL } from "../../components/locks/lease-view";
import { remainingTtl } from "../../components/locks/format";

describe("leaseView: what the TTL cell says", () => {
  it("counts down while the lease runs, with a tone by what is left", () => {
    expect(leaseView(20_000, 30_000)).toMatchObject({ kind: "counting", label: "20s", tone: "ok" });
    expect(leaseView(5_000, 30_000)).toMatchObject({ kind: "counting", tone: "warning" });
    expect(leaseView(900, 30_000)).toMatchObject({ kind: "counting", label: "0.9s", tone: "critical" });
  });

  it("a lease that reached 0 is not shown as held: it says the lease ended and the agent is confirming", () => {
    const receivedAt = 1_000_000;
    const remaining = remainingTtl(3_000, receivedAt, receivedAt + 3_500); // clamped to 0
    expect(leaseView(remaining, 3_000)).toEqual({ kind: "ended", label: "lease ended, confirming…" });
  });

  it("no TTL stays its own case", () => {
    expect(leaseView(null, null)).toEqual({ kind: "no-ttl", label: "no TTL" });
  });
});

describe("holdStatus: the detail page's badge", () => {
  it("held, lease ended (confirming), or how it stopped", () => {
    expect(holdStatus(true, 5_000, null)).toEqual({ label: "held", tone: "held" });
    expect(holdStatus(true, null, null)).toEqual({ label: "held", tone: "held" });
    expect(holdStatus(true, 0, "acquired")).toEqual({ label: LEASE_ENDED_LABEL, tone: "ended" });
    expect(holdStatus(false, null, "expired")).toEqual({ label: "not held (expired)", tone: "gone" });
    expect(holdStatus(false, null, null)).toEqual({ label: "unknown", tone: "gone" });
  });
});
