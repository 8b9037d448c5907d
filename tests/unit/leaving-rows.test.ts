import { describe, expect, it } from "vitest";
import type { Lock, LockEvent } from "../../lib/contract/lock";
import type { LiveLock } from "../../components/live/view-model";
import {
  FADE_MS,
  goneLockIds,
  MAX_LEAVING,
  mergeLeaving,
  pruneLeaving,
  updateLeaving,
} from "../../components/locks/leaving-rows";

const row = (id: string): LiveLock => ({ lock: { id, resource: `lock:${id}` } as Lock, receivedAt: 0 });
const rows = (...ids: string[]) => ids.map(row);
const ids = (r: Array<{ live: LiveLock }>) => r.map((x) => x.live.lock.id);
const event = (lockId: string, type: LockEvent["type"]) => ({ lockId, type }) as LockEvent;

describe("goneLockIds", () => {
  it("takes the latest event per lock (newest first)", () => {
    const gone = goneLockIds([
      event("a", "released"),
      event("b", "acquired"),
      event("b", "released"),
      event("c", "expired"),
      event("d", "lost"),
      event("e", "owner-changed"),
    ]);
    expect([...gone].sort()).toEqual(["a", "c", "d"]);
  });
});

describe("leaving rows", () => {
  const gone =
    (...g: string[]) =>
    (id: string) =>
      g.includes(id);

  it("keeps a released row at its place, then drops it after the fade", () => {
    const prev = { rows: rows("a", "b", "c"), offset: 10 };
    const next = rows("a", "c");
    const leaving = updateLeaving([], prev, next, gone("b"), 1000);
    expect(leaving).toHaveLength(1);
    expect(leaving[0]!.index).toBe(11);
    expect(ids(mergeLeaving(next, 10, leaving))).toEqual(["a", "b", "c"]);
    expect(mergeLeaving(next, 10, leaving)[1]!.leaving).not.toBeNull();
    expect(pruneLeaving(leaving, 1000 + FADE_MS - 1)).toHaveLength(1);
    expect(pruneLeaving(leaving, 1000 + FADE_MS)).toHaveLength(0);
  });

  it("a row that only moved out of the window (not gone) leaves at once", () => {
    const leaving = updateLeaving([], { rows: rows("a", "b"), offset: 0 }, rows("a"), gone(), 0);
    expect(leaving).toEqual([]);
  });

  it("a lock taken again drops its leaving row", () => {
    const first = updateLeaving([], { rows: rows("a", "b"), offset: 0 }, rows("a"), gone("b"), 0);
    const again = updateLeaving(first, { rows: rows("a"), offset: 0 }, rows("a", "b"), gone(), 100);
    expect(again).toEqual([]);
    expect(ids(mergeLeaving(rows("a", "b"), 0, first))).toEqual(["a", "b"]);
  });

  it("several released rows land at their own places", () => {
    const prev = { rows: rows("a", "b", "c", "d", "e"), offset: 0 };
    const next = rows("a", "c", "e");
    const leaving = updateLeaving([], prev, next, gone("b", "d"), 0);
    expect(ids(mergeLeaving(next, 0, leaving))).toEqual(["a", "b", "c", "d", "e"]);
    // Later releases join the ones still fading.
    const later = updateLeaving(leaving, { rows: next, offset: 0 }, rows("a", "e"), gone("b", "c", "d"), 500);
    expect(ids(mergeLeaving(rows("a", "e"), 0, later))).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("is bounded however many locks are released at once", () => {
    const many = Array.from({ length: 1000 }, (_, i) => `k${i}`);
    const leaving = updateLeaving([], { rows: rows(...many), offset: 0 }, [], () => true, 0);
    expect(leaving).toHaveLength(MAX_LEAVING);
    expect(mergeLeaving([], 0, leaving).length).toBeLessThanOrEqual(MAX_LEAVING);
  });

  it("a leaving row outside the current window is not drawn", () => {
    const leaving = updateLeaving([], { rows: rows("a", "b"), offset: 500 }, rows("a"), gone("b"), 0);
    expect(ids(mergeLeaving(rows("x", "y"), 0, leaving))).toEqual(["x", "y"]);
  });
});
