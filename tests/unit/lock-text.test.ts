import { describe, expect, it } from "vitest";
import type { Lock } from "../../lib/contract/lock";
import { indexLock, type IndexedLock } from "../../lib/server/lock-index";
import { LockText } from "../../lib/server/lock-text";
import { testLock } from "../harness/lock-fixture";

const lock = (id: string, resource: string, owner: string | null): Lock =>
  testLock(id, { resource, owner, ttlMs: 1000 });

/** A set of entries kept as LockOrder keeps them, reporting every add and remove to the index. */
function fleet() {
  const text = new LockText();
  const byId = new Map<string, IndexedLock>();
  return {
    text,
    put(id: string, resource: string, owner: string | null) {
      const old = byId.get(id);
      if (old) text.remove(old);
      const e = indexLock(lock(id, resource, owner), 0);
      byId.set(id, e);
      text.add(e);
    },
    drop(id: string) {
      const e = byId.get(id)!;
      byId.delete(id);
      text.remove(e);
    },
    search(q: string, max = 100_000) {
      const found = text.search(q, max, () => [...byId.values()]);
      return found && found.map((e) => e.lock.id).sort();
    },
    expected(q: string) {
      return [...byId.values()]
        .filter((e) => e.resourceLc.includes(q) || e.ownerLc.includes(q))
        .map((e) => e.lock.id)
        .sort();
    },
  };
}

describe("lock text index", () => {
  it("finds each lock once, by resource or owner, and never across the two fields", () => {
    const f = fleet();
    f.put("a", "Lock:Order:1", "worker-order");
    f.put("b", "lock:report:2", "Order-Bot");
    f.put("c", "lock:user:3", null);
    expect(f.search("order")).toEqual(["a", "b"]);
    expect(f.search("lock:")).toEqual(["a", "b", "c"]);
    expect(f.search(":1worker")).toEqual([]);
    // A query holding the separator cannot use the joined text.
    expect(f.search("1\u0000worker")).toBeNull();
  });

  it("stays exact while locks come, change and go after it was built, through its drop and rebuild", () => {
    const f = fleet();
    for (let i = 0; i < 3000; i++) f.put(`L${i}`, `lock:order:${i}`, `owner-${i % 7}`);
    expect(f.search("order:12")).toEqual(f.expected("order:12"));
    // Fewer changes than its bound: patched (new ones checked on their own, gone ones skipped).
    for (let i = 0; i < 300; i++) f.put(`L${i}`, `lock:report:${i}`, `owner-${i % 5}`);
    for (let i = 3000; i < 3200; i++) f.put(`L${i}`, `lock:order:${i}`, "owner-new");
    for (let i = 2900; i < 3000; i++) f.drop(`L${i}`);
    for (const q of ["order:12", "report:1", "owner-new", "order:29"]) expect(f.search(q)).toEqual(f.expected(q));
    // Many more: dropped and rebuilt by the next search.
    for (let i = 0; i < 2500; i++) f.put(`L${i}`, `lock:user:${i}`, "owner-9");
    for (const q of ["order:12", "user:24", "owner-9", "report:1"]) expect(f.search(q)).toEqual(f.expected(q));
  });

  it("gives up (null) when more than the limit match", () => {
    const f = fleet();
    for (let i = 0; i < 50; i++) f.put(`L${i}`, `lock:order:${i}`, null);
    expect(f.search("order", 49)).toBeNull();
    expect(f.search("order", 50)).toHaveLength(50);
  });
});
