import { describe, expect, it } from "vitest";
import type { Hazard, Lock } from "../../lib/contract/lock";
import { indexLock, matches, runQuery, sortValue, type IndexedLock } from "../../lib/server/lock-index";
import { LockOrder } from "../../lib/server/lock-order";
import { parseLockQuery, SORT_KEYS, type LockQuery } from "../../lib/server/lock-query";
import { prng } from "../harness/prng";

const HAZARDS: Hazard[] = [
  { code: "no-ttl", severity: "warning", message: "m" },
  { code: "expired-while-held", severity: "critical", message: "m" },
  { code: "held-too-long", severity: "info", message: "m" },
];

function randomLock(rand: () => number, id: string): Lock {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const hazards: Hazard[] = [];
  for (const h of HAZARDS) if (rand() < 0.2) hazards.push(h);
  if (hazards.length > 0 && rand() < 0.2) hazards.push(hazards[0]!);
  return {
    id,
    backend: pick(["redis", "redlock", "zookeeper"] as const),
    source: pick(["redis://127.0.0.1:1/0", "redis://127.0.0.1:2/0"]),
    // Few distinct values, so ties (broken by seq) are common in every sort.
    resource: `lock:${pick(["order", "report", "user"])}:${Math.floor(rand() * 20)}`,
    owner: rand() < 0.1 ? null : `owner-${Math.floor(rand() * 5)}`,
    library: pick(["generic", "redisson", "node-redlock"]),
    rule: "r",
    ttlMs: rand() < 0.1 ? null : Math.floor(rand() * 10) * 1000,
    holder: null,
    waiters: Array.from({ length: Math.floor(rand() * 3) }, (_, i) => ({ owner: `w${i}` })),
    since: new Date(Math.floor(rand() * 5) * 1000).toISOString(),
    observedAt: new Date(0).toISOString(),
    kind: "string",
    valuePreview: null,
    hazards,
    agentId: "a1",
  };
}

function q(qs: string): LockQuery {
  const r = parseLockQuery(new URLSearchParams(qs));
  if (!r.ok) throw new Error(r.error);
  return r.query;
}

/**
 * The reference: every match, sorted by (sort value, seq) with a plain sort; the hazards sort's ties go by resource
 * first, A to Z when descending (written out here, not through resourceTie, so the reference stays independent).
 */
function bruteForce(all: IndexedLock[], query: LockQuery): string[] {
  const dir = query.sort.desc ? -1 : 1;
  return all
    .filter((e) => matches(e, query.filter))
    .sort((a, b) => {
      const va = sortValue(a, query.sort.key);
      const vb = sortValue(b, query.sort.key);
      if (va !== vb) return dir * (va < vb ? -1 : 1);
      const ra = a.lock.resource;
      const rb = b.lock.resource;
      if (query.sort.key === "hazards" && ra !== rb) return query.sort.desc ? (ra < rb ? -1 : 1) : ra < rb ? 1 : -1;
      return dir * (a.seq - b.seq);
    })
    .map((e) => e.lock.id);
}

/** A LockOrder over a map of entries, fed the way LiveState feeds it. */
function store() {
  const map = new Map<string, IndexedLock>();
  const order = new LockOrder((id) => (map.has(id) ? [map.get(id)!] : []));
  return {
    map,
    order,
    put(e: IndexedLock) {
      const old = map.get(e.lock.id);
      if (old) order.remove(old);
      map.set(e.lock.id, e);
      order.add(e);
    },
    drop(id: string) {
      const old = map.get(id);
      if (!old) return;
      map.delete(id);
      order.remove(old);
    },
  };
}

const ids = (rows: IndexedLock[]) => rows.map((e) => e.lock.id);

// Substring filters: answered from the text index ("order", "er" in both a resource and an owner, "r:1" in
// resources only) or by a pass in order (a source or a library matches).
const FILTERS = [
  "",
  "q=order",
  "hazard=any",
  "hazard=no-ttl",
  "backend=redlock",
  "q=owner-1&library=generic",
  "q=er",
  "q=R:1&hazard=any",
  "q=127.0.0.1:2",
  "q=redisson",
];

/** Every page of a query through its cursors. */
function walk(order: LockOrder, base: string, limit: number, from: string | null = null): string[] {
  const out: string[] = [];
  let cursor = from;
  for (let rounds = 0; rounds < 10_000; rounds++) {
    const r = order.query(q(`${base}&limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`));
    out.push(...ids(r.page));
    cursor = r.nextCursor;
    if (!cursor) return out;
  }
  throw new Error("cursor walk did not end");
}

describe("lock order (sorted orders kept between queries)", () => {
  for (const seed of [1, 2, 3, 42, 1234]) {
    it(`matches a brute-force sort and runQuery under random inserts, updates and removals (seed ${seed})`, () => {
      const rand = prng(seed);
      const s = store();
      let nextId = 0;
      let at = 1_000_000;
      const live: string[] = [];
      for (let round = 0; round < 40; round++) {
        // A burst of changes: a few (applied one by one) or many (merged), between queries.
        const ops = rand() < 0.3 ? 150 + Math.floor(rand() * 200) : Math.floor(rand() * 20);
        for (let i = 0; i < ops; i++) {
          const r = rand();
          at += Math.floor(rand() * 50);
          if (r < 0.5 || live.length === 0) {
            const id = `L${nextId++}`;
            live.push(id);
            s.put(indexLock(randomLock(rand, id), at));
          } else if (r < 0.8) {
            // An update keeps the lock's seq, as LiveState does.
            const id = live[Math.floor(rand() * live.length)]!;
            s.put(indexLock(randomLock(rand, id), at, s.map.get(id)!.seq));
          } else {
            const k = Math.floor(rand() * live.length);
            s.drop(live[k]!);
            live.splice(k, 1);
          }
        }
        // Sometimes settled as LiveState does after a message, sometimes left to the query.
        if (rand() < 0.5) s.order.settle();
        const all = [...s.map.values()];
        const key = SORT_KEYS[Math.floor(rand() * SORT_KEYS.length)]!;
        const sort = `${rand() < 0.5 ? "-" : ""}${key}`;
        const filter = FILTERS[Math.floor(rand() * FILTERS.length)]!;
        const base = `sort=${sort}${filter ? `&${filter}` : ""}`;
        const full = q(`${base}&limit=1000`);
        const expected = bruteForce(all, full);
        const got = s.order.query(full);
        expect(ids(got.page)).toEqual(expected.slice(0, 1000));
        const reference = runQuery(all, full);
        expect(got.total).toBe(reference.total);
        expect(got.counts).toEqual(reference.counts);
        expect(got.nextCursor).toBe(reference.nextCursor);
        // Pages through cursors and a window at an offset give the same order.
        const limit = 5 + Math.floor(rand() * 40);
        expect(walk(s.order, base, limit)).toEqual(expected);
        const offset = Math.floor(rand() * (expected.length + 5));
        const windowed = q(`${base}&offset=${offset}&limit=${limit}`);
        expect(ids(s.order.query(windowed).page)).toEqual(expected.slice(offset, offset + limit));
        expect(s.order.query(windowed).nextCursor).toBe(runQuery(all, windowed).nextCursor);
        // A cursor from a page taken before more changes still starts after its row.
        const one = all[Math.floor(rand() * all.length)];
        if (one) {
          const idQuery = q(`id=${one.lock.id}&sort=${sort}`);
          expect(ids(s.order.query(idQuery).page)).toEqual([one.lock.id]);
        }
      }
    });
  }

  it("settles one order per message, the one with the most pending, and each order still reads right", () => {
    const rand = prng(7);
    const s = store();
    // A snapshot part's worth of changes at a time, as LiveState calls settle after each message.
    let next = 0;
    const part = (n: number) => {
      for (let i = 0; i < n; i++) s.put(indexLock(randomLock(rand, `L${next++}`), 1_000_000 + next));
    };
    part(2500);
    const merged: (string | null)[] = [];
    for (let i = 0; i < SORT_KEYS.length; i++) merged.push(s.order.settle());
    // Each order once, one per call: never five merges over every lock after one message.
    expect(new Set(merged)).toEqual(new Set(SORT_KEYS));
    expect(s.order.settle()).toBeNull();
    // Part-way through (two orders merged, three not): every order answers as a plain sort does.
    part(2500);
    const first = s.order.settle();
    expect(first).not.toBeNull();
    part(1000);
    const second = s.order.settle();
    // The one merged last time has fewer pending now (1,000) than the others (3,500).
    expect(second).not.toBeNull();
    expect(second).not.toBe(first);
    const all = [...s.map.values()];
    for (const key of SORT_KEYS) {
      for (const sort of [key, `-${key}`]) {
        const full = q(`sort=${sort}&limit=1000`);
        expect(ids(s.order.query(full).page)).toEqual(bruteForce(all, full).slice(0, 1000));
      }
    }
  });

  it("keeps a cursor's position while locks before it come and go", () => {
    const s = store();
    for (let i = 0; i < 300; i++) {
      s.put(indexLock(randomLock(prng(i), `L${String(i).padStart(3, "0")}`), 1000));
    }
    const first = s.order.query(q("sort=ttl&limit=100"));
    const cursor = first.nextCursor!;
    // The page's first lock goes, and a new lock that sorts before the cursor comes.
    s.drop(first.page[0]!.lock.id);
    s.put(indexLock({ ...randomLock(prng(999), "NEW"), ttlMs: 0 }, 0));
    const rest = walk(s.order, "sort=ttl", 100, cursor);
    const expected = bruteForce([...s.map.values()], q("sort=ttl")).filter(
      (id) => !ids(first.page).includes(id) && id !== "NEW",
    );
    expect(rest).toEqual(expected);
  });

  it("counts every lock without a filter, a code once per lock, and forgets codes that no lock carries", () => {
    const s = store();
    const base = randomLock(prng(7), "x");
    s.put(indexLock({ ...base, id: "a", hazards: [HAZARDS[0]!, HAZARDS[0]!] }, 0));
    s.put(indexLock({ ...base, id: "b", backend: "zookeeper", hazards: [HAZARDS[1]!] }, 0));
    expect(s.order.query(q("limit=0"))).toMatchObject({
      total: 2,
      counts: { byBackend: { [base.backend]: 1, zookeeper: 1 }, byHazard: { "no-ttl": 1, "expired-while-held": 1 } },
    });
    s.put(indexLock({ ...base, id: "b", backend: "zookeeper", hazards: [] }, 0, s.map.get("b")!.seq));
    s.drop("a");
    expect(s.order.query(q("limit=0"))).toMatchObject({
      total: 1,
      counts: { byBackend: { zookeeper: 1 }, byHazard: {} },
    });
  });
});
