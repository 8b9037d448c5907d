import { describe, expect, it } from "vitest";
import type { HistoryStore } from "../../lib/server/store";
import { withWriteTiming } from "../../lib/server/store-timing";

const fakeStore = (fail = false) =>
  ({
    saveEvents: async (events) => {
      if (fail) throw new Error("store down");
      return { stored: events.map((e) => e.id), fresh: [...events] };
    },
    countEvents: async () => 7,
  }) as Partial<HistoryStore> as HistoryStore;

const ev = {
  id: "e1",
  agentId: "a",
  type: "acquired",
  lockId: "L",
  backend: "redis",
  source: "s",
  resource: "r",
  owner: null,
  at: "2026-12-01T00:00:00.000Z",
} as const;

describe("withWriteTiming", () => {
  it("reports each batch's duration and size, and passes results and other methods through", async () => {
    const seen: [number, number][] = [];
    let t = 1000;
    const store = withWriteTiming(
      fakeStore(),
      (s, n) => seen.push([s, n]),
      () => (t += 250),
    );
    expect(await store.saveEvents([ev, { ...ev, id: "e2" }])).toEqual({
      stored: ["e1", "e2"],
      fresh: [ev, { ...ev, id: "e2" }],
    });
    expect(seen).toEqual([[0.25, 2]]);
    expect(await store.countEvents()).toBe(7);
  });

  it("times a failed write too, and still fails it", async () => {
    const seen: number[] = [];
    const store = withWriteTiming(fakeStore(true), (_s, n) => seen.push(n));
    await expect(store.saveEvents([ev])).rejects.toThrow("store down");
    expect(seen).toEqual([1]);
  });

  it("does not count an empty message (a sources-only update)", async () => {
    const seen: number[] = [];
    await withWriteTiming(fakeStore(), (_s, n) => seen.push(n)).saveEvents([]);
    expect(seen).toEqual([]);
  });
});
