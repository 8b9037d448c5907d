import { describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { withGroupCommit } from "../../lib/server/group-commit";
import type { HistoryStore } from "../../lib/server/store";

const ev = (id: string): LockEvent => ({
  id,
  agentId: "a",
  type: "acquired",
  lockId: `L-${id}`,
  backend: "redis",
  source: "s",
  resource: `r-${id}`,
  owner: null,
  at: "2026-12-01T00:00:00.000Z",
});

/** An idempotent store whose writes finish only when the test says so. */
function gatedStore() {
  const kept = new Set<string>();
  const writes: Array<{ ids: string[]; finish(fail?: Error): void }> = [];
  const store = {
    saveEvents: (events: readonly LockEvent[]) =>
      new Promise<{ stored: string[]; fresh: LockEvent[] }>((resolve, reject) => {
        writes.push({
          ids: events.map((e) => e.id),
          finish(fail) {
            if (fail) return reject(fail);
            const fresh = events.filter((e) => (kept.has(e.id) ? false : (kept.add(e.id), true)));
            resolve({ stored: [...new Set(events.map((e) => e.id))], fresh });
          },
        });
      }),
    countEvents: async () => kept.size,
  } as Partial<HistoryStore> as HistoryStore;
  return { store, writes, kept };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("withGroupCommit", () => {
  it("writes the messages that arrive during a write together, and answers each with its own events", async () => {
    const { store, writes } = gatedStore();
    const grouped: Array<[number, number]> = [];
    const g = withGroupCommit(store, { maxEvents: 100, concurrency: 1, onGroup: (m, n) => grouped.push([m, n]) });
    const first = g.saveEvents([ev("a1"), ev("a2")]);
    await tick();
    const second = g.saveEvents([ev("b1")]);
    const third = g.saveEvents([ev("c1"), ev("c2")]);
    await tick();
    expect(writes.map((w) => w.ids)).toEqual([["a1", "a2"]]);
    writes[0]!.finish();
    expect(await first).toEqual({ stored: ["a1", "a2"], fresh: [ev("a1"), ev("a2")] });
    await tick();
    // Both waiting messages in one write.
    expect(writes.map((w) => w.ids)).toEqual([
      ["a1", "a2"],
      ["b1", "c1", "c2"],
    ]);
    writes[1]!.finish();
    expect(await second).toEqual({ stored: ["b1"], fresh: [ev("b1")] });
    expect(await third).toEqual({ stored: ["c1", "c2"], fresh: [ev("c1"), ev("c2")] });
    expect(grouped).toEqual([
      [1, 2],
      [2, 3],
    ]);
  });

  it("keeps each group within maxEvents, and runs up to `concurrency` writes at once", async () => {
    const { store, writes } = gatedStore();
    const g = withGroupCommit(store, { maxEvents: 3, concurrency: 2 });
    const calls = [["1", "2"], ["3"], ["4", "5"], ["6"], ["7", "8", "9", "10"]].map((ids) => g.saveEvents(ids.map(ev)));
    await tick();
    // Two writes started at once, each of one message (nothing was waiting yet).
    expect(writes.map((w) => w.ids)).toEqual([["1", "2"], ["3"]]);
    writes[0]!.finish();
    await tick();
    await tick();
    // The waiting messages "4,5" and "6" fit in 3; "7..10" is larger than maxEvents and goes alone.
    expect(writes.map((w) => w.ids).slice(2)).toEqual([["4", "5", "6"]]);
    writes[1]!.finish();
    await tick();
    await tick();
    expect(writes.map((w) => w.ids).slice(3)).toEqual([["7", "8", "9", "10"]]);
    for (const w of writes.slice(2)) w.finish();
    const results = await Promise.all(calls);
    expect(results.map((r) => r.stored)).toEqual([["1", "2"], ["3"], ["4", "5"], ["6"], ["7", "8", "9", "10"]]);
  });

  it("fails every message of a failed write, so each agent keeps its events; the retry stores them once", async () => {
    const { store, writes, kept } = gatedStore();
    const g = withGroupCommit(store, { maxEvents: 100, concurrency: 1 });
    const first = g.saveEvents([ev("a1")]);
    await tick();
    const second = g.saveEvents([ev("b1")]);
    const third = g.saveEvents([ev("c1")]);
    writes[0]!.finish();
    await first;
    await tick();
    writes[1]!.finish(new Error("connection terminated"));
    await expect(second).rejects.toThrow("connection terminated");
    await expect(third).rejects.toThrow("connection terminated");
    const retry = g.saveEvents([ev("b1"), ev("c1")]);
    await tick();
    writes[2]!.finish();
    expect((await retry).fresh.map((e) => e.id)).toEqual(["b1", "c1"]);
    expect([...kept].sort()).toEqual(["a1", "b1", "c1"]);
  });

  it("counts an event sent in two messages of one group as fresh for the first only", async () => {
    const { store, writes } = gatedStore();
    const g = withGroupCommit(store, { maxEvents: 100, concurrency: 1 });
    const first = g.saveEvents([ev("x")]);
    await tick();
    const original = g.saveEvents([ev("d1"), ev("d2")]);
    const replay = g.saveEvents([ev("d2"), ev("d3")]);
    writes[0]!.finish();
    await first;
    await tick();
    writes[1]!.finish();
    expect(await original).toEqual({ stored: ["d1", "d2"], fresh: [ev("d1"), ev("d2")] });
    expect(await replay).toEqual({ stored: ["d2", "d3"], fresh: [ev("d3")] });
  });
});
