import { describe, expect, it } from "vitest";
import { emptyRankingText, RANK_CHOICES, rankChoice } from "../../components/history/rank-words";
import { RANK_BY } from "../../lib/contract/alerts";

const row = {
  resource: "r",
  backend: "redis",
  lockId: "L",
  acquisitions: 3,
  ownerChanges: 2,
  expiries: 0,
  holdAvgMs: null,
  holdMaxMs: null,
  waitMsTotal: 65_000,
  waitMsMax: 60_000,
  waited: 4,
  noTtlMs: 7_200_000,
};

describe("History ranking words", () => {
  it("offers every ranking the API knows", () => {
    expect(RANK_CHOICES.map((c) => c.by)).toEqual([...RANK_BY]);
  });
  it("shows each ranking's own figure", () => {
    expect(rankChoice("contention").value(row)).toBe("5");
    expect(rankChoice("wait").value(row)).toBe("1m 5s (longest 1m 0s)");
    expect(rankChoice("waiters").value(row)).toBe("4");
    expect(rankChoice("takeovers").value(row)).toBe("2");
    expect(rankChoice("no-ttl").value(row)).toBe("2h 0m");
  });
  it("an empty wait ranking explains that plain Redis waits are unseen", () => {
    expect(emptyRankingText("wait")).toMatch(/plain Redis clients retry unseen/);
  });
});
