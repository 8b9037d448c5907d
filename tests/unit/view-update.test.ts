import { describe, expect, it } from "vitest";
import type { Lock } from "../../lib/contract/lock";
import type { ViewUpdate } from "../../lib/contract/socket";
import { applyViewUpdate, type LiveLock } from "../../components/live/view-model";
import { testLock } from "../harness/lock-fixture";

const lock = (id: string, owner = "o"): Lock => testLock(id, { source: "s", resource: id, owner, ttlMs: 1000 });

const update = (u: Partial<ViewUpdate>): ViewUpdate => ({
  viewId: "v",
  seq: 1,
  full: false,
  generatedAt: "",
  total: 0,
  counts: { byBackend: {}, byHazard: {} },
  offset: 0,
  locks: [],
  removed: [],
  ...u,
});

const ids = (s: { byId: Map<string, LiveLock>; order: string[] }) => s.order.map((id) => s.byId.get(id)!.lock.id);

describe("applyViewUpdate (the browser's copy of a view)", () => {
  it("a full update replaces the window; a delta patches rows and takes the new order", () => {
    const empty = { byId: new Map<string, LiveLock>(), order: [] };
    const a = applyViewUpdate(empty, update({ full: true, locks: [lock("a"), lock("b"), lock("c")] }), 100);
    expect(ids(a)).toEqual(["a", "b", "c"]);
    expect(a.byId.get("a")!.receivedAt).toBe(100);

    const b = applyViewUpdate(
      a,
      update({ locks: [lock("b", "new"), lock("d")], removed: ["c"], order: ["d", "a", "b"] }),
      200,
    );
    expect(ids(b)).toEqual(["d", "a", "b"]);
    expect(b.byId.get("b")!.lock.owner).toBe("new");
    expect(b.byId.get("b")!.receivedAt).toBe(200);
    // Unchanged rows keep their receipt time: their countdown continues from when they were sent.
    expect(b.byId.get("a")!.receivedAt).toBe(100);
    // The previous state is not mutated (React state).
    expect(ids(a)).toEqual(["a", "b", "c"]);

    // Without an order, the old order stands, less the removed rows.
    const c = applyViewUpdate(b, update({ removed: ["a"] }), 300);
    expect(ids(c)).toEqual(["d", "b"]);
  });
});
