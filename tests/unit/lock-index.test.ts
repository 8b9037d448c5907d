import { describe, expect, it } from "vitest";
import type { Hazard, Lock } from "../../lib/contract/lock";
import { indexLock, runQuery, type IndexedLock } from "../../lib/server/lock-index";
import { parseLockQuery, type LockQuery } from "../../lib/server/lock-query";
import { testLock } from "../harness/lock-fixture";

const hz = (code: string, severity: Hazard["severity"] = "warning"): Hazard => ({ code, severity, message: code });

const lock = (id: string, over: Partial<Lock> = {}): Lock => testLock(id, { owner: `owner-${id}`, ...over });

function q(qs: string): LockQuery {
  const r = parseLockQuery(new URLSearchParams(qs));
  if (!r.ok) throw new Error(r.error);
  return r.query;
}

const ids = (rows: IndexedLock[]) => rows.map((e) => e.lock.id);

describe("lock index", () => {
  const at = 1_000_000;
  const all = [
    indexLock(lock("a", { resource: "lock:order:17", owner: "Worker-One", ttlMs: 5000 }), at),
    indexLock(lock("b", { backend: "redlock", library: "node-redlock", ttlMs: null, hazards: [hz("no-ttl")] }), at),
    indexLock(
      lock("c", {
        source: "redis://127.0.0.1:2/0",
        ttlMs: 1000,
        hazards: [hz("expired-while-held", "critical"), hz("held-too-long")],
      }),
      at,
    ),
    indexLock(
      lock("d", {
        resource: "lock:order:99",
        waiters: [{ owner: "w1" }, { owner: "w2" }],
        since: new Date(500).toISOString(),
      }),
      at - 4000,
    ),
  ];

  it("filters by substring of resource, owner, source or library, case-insensitively", () => {
    expect(ids(runQuery(all, q("q=ORDER")).page)).toEqual(["a", "d"]);
    expect(ids(runQuery(all, q("q=worker-one")).page)).toEqual(["a"]);
    expect(ids(runQuery(all, q("q=127.0.0.1:2")).page)).toEqual(["c"]);
    expect(ids(runQuery(all, q("q=node-red")).page)).toEqual(["b"]);
    // The separator between fields never lets a query match across two of them.
    expect(runQuery(all, q("q=17owner")).total).toBe(0);
  });

  it("matches mixed-case sources and libraries lock after lock, whichever was looked up before", () => {
    // Alternating values: the lower-cased form of the previous lock's source or library must never answer for this one.
    const mixed = Array.from({ length: 6 }, (_, i) =>
      indexLock(
        lock(`m${i}`, {
          source: i % 2 === 0 ? "redis://Cache-A:6379/0" : "redis://cache-b:6379/0",
          library: i % 3 === 0 ? "Redisson" : "generic",
          resource: i === 5 ? "Lock:MiXed" : `lock:m${i}`,
        }),
        at,
      ),
    );
    const found = (qs: string) => ids(runQuery(mixed, q(qs)).page).sort();
    expect(found("q=cache-a")).toEqual(["m0", "m2", "m4"]);
    expect(found("q=CACHE-B")).toEqual(["m1", "m3", "m5"]);
    expect(found("q=redisson")).toEqual(["m0", "m3"]);
    expect(found("q=lock:mixed")).toEqual(["m5"]);
    // The lock keeps its own spelling: only the search is case-insensitive.
    expect(mixed[5]!.lock.resource).toBe("Lock:MiXed");
    expect(mixed[0]!.lock.source).toBe("redis://Cache-A:6379/0");
  });

  it("shares one empty array for a lock's missing waiters and hazards, and keeps non-empty ones", () => {
    const [plain, busy] = [
      indexLock(lock("p"), at),
      indexLock(lock("w", { waiters: [{ owner: "w1" }], hazards: [hz("no-ttl")] }), at),
    ];
    expect(plain!.lock.waiters).toEqual([]);
    expect(plain!.lock.waiters).toBe(indexLock(lock("p2"), at).lock.hazards);
    expect(busy!.lock.waiters).toEqual([{ owner: "w1" }]);
    expect(busy!.lock.hazards).not.toBe(plain!.lock.hazards);
    expect(JSON.stringify(plain!.lock)).toBe(JSON.stringify(lock("p")));
  });

  it("filters by backend, library, source, hazard code or any hazard, pattern and id", () => {
    expect(ids(runQuery(all, q("backend=redlock")).page)).toEqual(["b"]);
    expect(ids(runQuery(all, q("library=node-redlock")).page)).toEqual(["b"]);
    expect(ids(runQuery(all, q("source=redis://127.0.0.1:2/0")).page)).toEqual(["c"]);
    expect(ids(runQuery(all, q("hazard=no-ttl")).page)).toEqual(["b"]);
    expect(ids(runQuery(all, q("hazard=any")).page)).toEqual(["b", "c"]);
    expect(ids(runQuery(all, q("pattern=lock:order:*")).page)).toEqual(["a", "d"]);
    expect(ids(runQuery(all, q("id=c")).page)).toEqual(["c"]);
  });

  it("counts every match by backend and hazard, whatever the page size", () => {
    const r = runQuery(all, q("limit=1"));
    expect(r.total).toBe(4);
    expect(r.page).toHaveLength(1);
    expect(r.counts).toEqual({
      byBackend: { redis: 3, redlock: 1 },
      byHazard: { "no-ttl": 1, "expired-while-held": 1, "held-too-long": 1 },
    });
    expect(runQuery(all, q("limit=0"))).toMatchObject({ total: 4, page: [] });
  });

  it("sorts by resource, ttl (never-expiring last), held, waiters and hazards, each both ways", () => {
    expect(ids(runQuery(all, q("sort=resource")).page)).toEqual(["b", "c", "a", "d"]);
    // d was received 4 s earlier: its lease ends first although its ttlMs is the largest.
    expect(ids(runQuery(all, q("sort=ttl")).page)).toEqual(["c", "a", "d", "b"]);
    expect(ids(runQuery(all, q("sort=-ttl")).page)).toEqual(["b", "d", "a", "c"]);
    // a, b and c were acquired at 0, d at 500: held longest first, ties by id (reversed with the direction).
    expect(ids(runQuery(all, q("sort=-held")).page)).toEqual(["c", "b", "a", "d"]);
    expect(ids(runQuery(all, q("sort=held")).page)).toEqual(["d", "a", "b", "c"]);
    expect(ids(runQuery(all, q("sort=-waiters")).page)[0]).toBe("d");
    // Worst severity first, then the number of hazards, then by resource (lock:order:17 before lock:order:99).
    expect(ids(runQuery(all, q("sort=-hazards")).page)).toEqual(["c", "b", "a", "d"]);
  });

  it("pages with cursors: every match exactly once, in order, also when locks come and go between pages", () => {
    const many = Array.from({ length: 250 }, (_, i) =>
      indexLock(lock(`L${String(i).padStart(3, "0")}`, { ttlMs: i % 7 === 0 ? null : i * 10 }), at),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let rounds = 0;
    do {
      const r = runQuery(many, q(`sort=-ttl&limit=60${cursor ? `&cursor=${cursor}` : ""}`));
      seen.push(...ids(r.page));
      cursor = r.nextCursor;
      // A lock before the cursor disappears: later pages are not shifted by it.
      if (rounds === 0)
        many.splice(
          many.findIndex((e) => e.lock.id === seen[0]),
          1,
        );
      rounds++;
    } while (cursor);
    expect(rounds).toBe(5);
    expect(new Set(seen).size).toBe(250);
    const full = ids(runQuery(many, q("sort=-ttl&limit=1000")).page);
    expect(seen.slice(1)).toEqual(full);
  });

  it("the hazards sort (the table's default, -hazards) breaks ties by resource, A to Z when descending", () => {
    // Indexed in an order unlike the names', so a tie-break by arrival would show.
    const locks = ["m", "c", "x", "a", "k"].map((id) => indexLock(lock(id), at));
    locks.push(indexLock(lock("z", { hazards: [hz("no-ttl")] }), at));
    locks.push(indexLock(lock("b", { hazards: [hz("expired-while-held", "critical")] }), at));
    expect(ids(runQuery(locks, q("sort=-hazards")).page)).toEqual(["b", "z", "a", "c", "k", "m", "x"]);
    // One order read backwards: ascending, the ties run Z to A.
    expect(ids(runQuery(locks, q("sort=hazards")).page)).toEqual(["x", "m", "k", "c", "a", "z", "b"]);
    expect(ids(runQuery(locks, q("sort=-hazards&offset=3&limit=2")).page)).toEqual(["c", "k"]);
  });

  it("pages the hazards sort with cursors in the same order, every lock once", () => {
    const many = Array.from({ length: 230 }, (_, i) =>
      indexLock(
        lock(`L${String((i * 37) % 230).padStart(3, "0")}`, { hazards: i % 9 === 0 ? [hz("no-ttl")] : [] }),
        at,
      ),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r = runQuery(many, q(`sort=-hazards&limit=50${cursor ? `&cursor=${cursor}` : ""}`));
      seen.push(...ids(r.page));
      cursor = r.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids(runQuery(many, q("sort=-hazards&limit=1000")).page));
    expect(new Set(seen).size).toBe(230);
  });

  it("answers a window at an offset, as the virtualized table scrolls", () => {
    const many = Array.from({ length: 50 }, (_, i) => indexLock(lock(`L${String(i).padStart(2, "0")}`), at));
    const r = runQuery(many, q("offset=20&limit=5"));
    expect(ids(r.page)).toEqual(["L20", "L21", "L22", "L23", "L24"]);
    expect(r.total).toBe(50);
    expect(runQuery(many, q("offset=60&limit=5")).page).toEqual([]);
  });
});
