import { describe, expect, it } from "vitest";
import { LockTracker, REVISIONS_PER_CALL, STABLE_PART, type ObservedLock } from "../../agent/core/tracker";

let n = 0;
const tracker = () => new LockTracker({ agentId: "a1", newId: () => `id-${++n}-xxxxxxxx` });

function obs(owner: string, ttlMs: number | null, atMs: number, extra: Partial<ObservedLock> = {}) {
  const lock: ObservedLock = {
    id: "L1",
    backend: "redis",
    source: "redis://127.0.0.1:1/0",
    resource: "lock:x",
    owner,
    library: "generic",
    rule: "generic-string-token",
    ttlMs,
    holder: null,
    waiters: [],
    observedAt: new Date(atMs).toISOString(),
    kind: "string",
    valuePreview: owner,
    hazards: [],
    agentId: "a1",
    ...extra,
  };
  return { lock, observedAtMs: atMs };
}

const T = Date.parse("2026-01-01T00:00:00Z");

describe("LockTracker", () => {
  it("reports a new lock as acquired and upserts it", () => {
    const t = tracker();
    const out = t.apply([obs("tok", 5000, T)], []);
    expect(out.events.map((e) => e.type)).toEqual(["acquired"]);
    expect(out.upserts).toHaveLength(1);
    expect(out.upserts[0]!.since).toBe(new Date(T).toISOString());
  });

  it("a lock marked with its stable part is upserted when its hazards change, and not while both stay the same", () => {
    const t = tracker();
    const { lock } = obs("tok", null, T);
    const { hazards: _h, observedAt: _o, ttlMs: _t, ...stable } = lock;
    const marked = (atMs: number, hazards: ObservedLock["hazards"], part: object = stable) => ({
      lock: { ...lock, observedAt: new Date(atMs).toISOString(), hazards, [STABLE_PART]: part } as ObservedLock,
      observedAtMs: atMs,
    });
    const slow = [{ code: "held-too-long", severity: "warning" as const, message: "Held at least 10 min." }];
    expect(t.apply([marked(T, [])], []).upserts).toHaveLength(1);
    expect(t.apply([marked(T + 1000, [])], []).upserts).toEqual([]);
    const up = t.apply([marked(T + 2000, slow)], []).upserts;
    expect(up.map((l) => l.hazards)).toEqual([slow]);
    expect(t.apply([marked(T + 3000, [...slow])], []).upserts).toEqual([]);
    // A new stable part with other content (a source rebuilt the lock) is a change too.
    const other = marked(T + 4000, slow, { ...stable, resource: "lock:y" });
    expect(t.apply([{ ...other, lock: { ...other.lock, resource: "lock:y" } }], []).upserts).toHaveLength(1);
  });

  it("sends nothing while a lock just counts down", () => {
    const t = tracker();
    t.apply([obs("tok", 5000, T)], []);
    const out = t.apply([obs("tok", 4000, T + 1000)], []);
    expect(out).toEqual({ events: [], upserts: [], removed: [] });
  });

  it("reports a renewal and upserts the new TTL", () => {
    const t = tracker();
    t.apply([obs("tok", 5000, T)], []);
    const out = t.apply([obs("tok", 30_000, T + 1000)], []);
    expect(out.events.map((e) => e.type)).toEqual(["renewed"]);
    expect(out.upserts[0]!.ttlMs).toBe(30_000);
  });

  it("tells two holdings apart that share the display owner (a value cut at 128 characters) by fingerprint", () => {
    const t = tracker();
    const shown = `${"x".repeat(128)}…(+40 bytes)`;
    t.apply([obs(shown, 5000, T, { ownerFingerprint: "sha1:aaaa" })], []);
    const out = t.apply([obs(shown, 5000, T + 1000, { ownerFingerprint: "sha1:bbbb" })], []);
    expect(out.events[0]).toMatchObject({ type: "owner-changed", detail: { sameOwnerText: true } });
    expect(out.upserts[0]).toMatchObject({ ownerFingerprint: "sha1:bbbb", since: new Date(T + 1000).toISOString() });
    // A fingerprint that could not be computed this time (a refused script) proves no change.
    expect(t.apply([obs(shown, 4000, T + 2000)], []).events).toEqual([]);
  });

  it("keeps `since` across renewals and resets it on an owner change", () => {
    const t = tracker();
    t.apply([obs("a", 5000, T)], []);
    t.apply([obs("a", 9000, T + 1000)], []);
    const out = t.apply([obs("b", 9000, T + 2000)], []);
    expect(out.events[0]).toMatchObject({ type: "owner-changed", owner: "b", previousOwner: "a" });
    expect(out.events[0]!.detail).toMatchObject({ afterExpiry: false, heldMs: 2000 });
    expect(out.upserts[0]!.since).toBe(new Date(T + 2000).toISOString());
  });

  it("tells expired from released by the lease left at the last observation", () => {
    const t = tracker();
    t.apply([obs("a", 800, T), { ...obs("b", 60_000, T), lock: { ...obs("b", 60_000, T).lock, id: "L2" } }], []);
    const out = t.apply(
      [],
      [
        { id: "L1", atMs: T + 1000 },
        { id: "L2", atMs: T + 1000 },
      ],
    );
    expect(out.events.map((e) => [e.lockId, e.type])).toEqual([
      ["L1", "expired"],
      ["L2", "released"],
    ]);
    expect(out.removed).toEqual(["L1", "L2"]);
    expect(t.size).toBe(0);
  });

  it("reports keys lost in a server restart as lost, not released", () => {
    const t = tracker();
    t.apply([obs("a", 60_000, T)], []);
    const out = t.apply([], [{ id: "L1", atMs: T + 1000 }], { reason: "server-restarted" });
    expect(out.events[0]).toMatchObject({ type: "lost", detail: { reason: "server-restarted" } });
  });

  it("ignores a gone report for a lock it never tracked", () => {
    const t = tracker();
    expect(t.apply([], [{ id: "nope", atMs: T }]).events).toEqual([]);
  });

  it("upserts when a viewer-visible field changes without an event (waiters)", () => {
    const t = tracker();
    t.apply([obs("a", 5000, T)], []);
    const out = t.apply([obs("a", 4000, T + 1000, { waiters: [{ owner: "w1" }] })], []);
    expect(out.events).toEqual([]);
    expect(out.upserts).toHaveLength(1);
  });

  it("gives every event a distinct id", () => {
    const t = tracker();
    const a = t.apply([obs("a", 5000, T)], []);
    const b = t.apply([obs("b", 5000, T + 100)], []);
    expect(a.events[0]!.id).not.toBe(b.events[0]!.id);
  });
});

describe("LockTracker: semaphore permits are holders, not owners", () => {
  const P1 = "1b4e28ba-2fa1-4d3b-a3f5-ef19a2b5c8e0";
  const P2 = "9c1d0e2f-3a4b-4c5d-8e6f-7a8b9c0d77aa";
  const P3 = "0a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d";
  function sem(holders: Array<[string, number]>, atMs: number, extra: Partial<ObservedLock> = {}) {
    return obs(holders[0]?.[0] ?? "", 10_000, atMs, {
      kind: "zset",
      library: "redis-semaphore",
      rule: "redis-semaphore-semaphore",
      holders: holders.map(([owner, ttlMs]) => ({ owner, ttlMs })),
      ...extra,
    });
  }

  it("reports each permit's acquire and release, and never an owner change when permits rotate", () => {
    const t = tracker();
    const first = t.apply(
      [
        sem(
          [
            [P1, 10_000],
            [P2, 10_000],
          ],
          T,
        ),
      ],
      [],
    );
    expect(first.events.map((e) => [e.type, e.owner])).toEqual([
      ["acquired", P1],
      ["acquired", P2],
    ]);
    expect(first.upserts[0]!.holders!.map((h) => h.since)).toEqual([
      new Date(T).toISOString(),
      new Date(T).toISOString(),
    ]);
    // P1 gives its permit back long before its lease ends and P3 takes a permit: the "first" holder changed
    const out = t.apply(
      [
        sem(
          [
            [P2, 9_000],
            [P3, 10_000],
          ],
          T + 1000,
        ),
      ],
      [],
    );
    expect(out.events.map((e) => [e.type, e.owner])).toEqual([
      ["released", P1],
      ["acquired", P3],
    ]);
    expect(out.events.some((e) => e.type === "owner-changed")).toBe(false);
    expect(out.events[0]!.detail).toMatchObject({ permit: true, heldMs: 1000 });
    const lock = out.upserts[0]!;
    expect(lock.holders!.map((h) => [h.owner, h.since])).toEqual([
      [P2, new Date(T).toISOString()],
      [P3, new Date(T + 1000).toISOString()],
    ]);
    expect(lock.hazards.map((h) => h.code)).not.toContain("expired-while-held");
  });

  it("a permit whose own lease ran out is expired, not taken over", () => {
    const t = tracker();
    t.apply(
      [
        sem(
          [
            [P1, 800],
            [P2, 10_000],
          ],
          T,
        ),
      ],
      [],
    );
    const out = t.apply(
      [
        sem(
          [
            [P2, 9_000],
            [P3, 10_000],
          ],
          T + 1000,
        ),
      ],
      [],
    );
    expect(out.events.map((e) => [e.type, e.owner])).toEqual([
      ["expired", P1],
      ["acquired", P3],
    ]);
  });

  it("sends nothing while permits only count down, and a refresh is that permit's renewal", () => {
    const t = tracker();
    t.apply(
      [
        sem(
          [
            [P1, 10_000],
            [P2, 10_000],
          ],
          T,
        ),
      ],
      [],
    );
    expect(
      t.apply(
        [
          sem(
            [
              [P1, 9_000],
              [P2, 9_000],
            ],
            T + 1000,
          ),
        ],
        [],
      ),
    ).toEqual({ events: [], upserts: [], removed: [] });
    const out = t.apply(
      [
        sem(
          [
            [P1, 8_000],
            [P2, 10_000],
          ],
          T + 2000,
        ),
      ],
      [],
    );
    expect(out.events.map((e) => [e.type, e.owner])).toEqual([["renewed", P2]]);
    expect(out.upserts).toHaveLength(1);
  });

  it("when the key goes, every permit ends by its own lease", () => {
    const t = tracker();
    t.apply(
      [
        sem(
          [
            [P1, 500],
            [P2, 10_000],
          ],
          T,
        ),
      ],
      [],
    );
    const out = t.apply([], [{ id: "L1", atMs: T + 1000 }]);
    expect(out.events.map((e) => [e.type, e.owner])).toEqual([
      ["expired", P1],
      ["released", P2],
    ]);
  });

  it("a partial read (more permits than read) reports no per-permit comings and goings", () => {
    const t = tracker();
    t.apply([sem([[P1, 10_000]], T, { holdersTotal: 500 })], []);
    const out = t.apply([sem([[P2, 10_000]], T + 1000, { holdersTotal: 500 })], []);
    // only what the key itself shows: its TTL was re-set (an acquire or refresh somewhere)
    expect(out.events.map((e) => e.type)).toEqual(["renewed"]);
  });
});

describe("LockTracker.reviseHazards", () => {
  it("takes a remembered takeover off a quiet lock once its memory has passed, without a new read", () => {
    const t = new LockTracker({
      agentId: "a1",
      newId: () => `id-${++n}-xxxxxxxx`,
      history: { maxHoldMs: 0, rememberMs: 4000 },
    });
    t.apply([obs("worker-A-5b1f0c7e9d", 600, T)], []);
    // A's lease ran out (read as expired), then B took the lock: the takeover is remembered for 4 s.
    t.apply([], [{ id: "L1", atMs: T + 700 }]);
    t.apply([obs("worker-B-77aa01c3e2", 30_000, T + 800)], []);
    expect(t.locks()[0]!.hazards.map((h) => h.code)).toContain("expired-while-held");
    expect(t.reviseHazards(T + 2000).upserts).toEqual([]);
    const later = t.reviseHazards(T + 800 + 4001);
    expect(later.upserts).toHaveLength(1);
    expect(later.upserts[0]!.hazards.map((h) => h.code)).not.toContain("expired-while-held");
    expect(t.locks()[0]!.hazards.map((h) => h.code)).not.toContain("expired-while-held");
    expect(t.reviseHazards(T + 9000).upserts).toEqual([]);
  });

  it("raises held-too-long on a quiet lock at the hold limit, and renewals-stopped once a watchdog goes silent", () => {
    const t = new LockTracker({
      agentId: "a1",
      newId: () => `id-${++n}-xxxxxxxx`,
      history: { maxHoldMs: 60_000, rememberMs: 4000 },
    });
    const other = (id: string, at: number) => obs(`owner-of-${id}-0123456789`, 30_000, at, { id, resource: id });
    t.apply([other("L1", T), other("L2", T)], []);
    // L2's watchdog renews every 10 s, twice; then nothing more is read of either lock.
    t.apply([other("L2", T + 10_000)], []);
    t.apply([other("L2", T + 20_000)], []);
    expect(t.reviseHazards(T + 30_000).upserts).toEqual([]);
    const silent = t.reviseHazards(T + 40_201).upserts;
    expect(silent.map((l) => [l.id, l.hazards.map((h) => h.code)])).toEqual([["L2", ["renewals-stopped"]]]);
    expect(t.reviseHazards(T + 50_000).upserts).toEqual([]);
    // Past the limit L2 was renewed within the last minute (a zombie), then no longer: held too long.
    const long = t.reviseHazards(T + 60_001).upserts;
    expect(long.map((l) => [l.id, l.hazards.map((h) => h.code)])).toEqual([
      ["L1", ["held-too-long"]],
      ["L2", ["renewals-stopped", "zombie-renewal"]],
    ]);
    const later = t.reviseHazards(T + 80_000).upserts;
    expect(later.map((l) => [l.id, l.hazards.map((h) => h.code)])).toEqual([
      ["L2", ["renewals-stopped", "held-too-long"]],
    ]);
    expect(t.reviseHazards(T + 120_000).upserts).toEqual([]);
  });

  it("revises at most REVISIONS_PER_CALL locks a call when many pass the hold limit together, the rest at the next", () => {
    const t = new LockTracker({
      agentId: "a1",
      newId: () => `id-${++n}-xxxxxxxx`,
      history: { maxHoldMs: 60_000, rememberMs: 4000 },
    });
    const count = REVISIONS_PER_CALL + 2500;
    const ids = Array.from({ length: count }, (_, i) => `L${i}`);
    t.apply(
      ids.map((id) => obs(`owner-of-${id}-0123456789`, 30_000, T, { id, resource: id })),
      [],
    );
    expect(t.reviseHazards(T + 1000).upserts).toEqual([]);
    const first = t.reviseHazards(T + 60_001).upserts;
    expect(first).toHaveLength(REVISIONS_PER_CALL);
    const second = t.reviseHazards(T + 61_000).upserts;
    expect(second).toHaveLength(2500);
    // Every lock once, and each with the hazard.
    expect(new Set([...first, ...second].map((l) => l.id)).size).toBe(count);
    expect(t.locks().every((l) => l.hazards.some((h) => h.code === "held-too-long"))).toBe(true);
    expect(t.reviseHazards(T + 62_000).upserts).toEqual([]);
  });

  it("gives quiet locks past the hold limit one shared hazard, and a revised lock the same digest at its next read", () => {
    const t = new LockTracker({
      agentId: "a1",
      newId: () => `id-${++n}-xxxxxxxx`,
      history: { maxHoldMs: 60_000, rememberMs: 4000 },
    });
    // A lease counting down from 100 s: read again at the same moment, nothing changed.
    const other = (id: string, at: number) =>
      obs(`owner-of-${id}-0123456789`, 100_000 - (at - T), at, { id, resource: id });
    t.apply([other("L1", T), other("L2", T)], []);
    const [a, b] = t.reviseHazards(T + 60_001).upserts;
    expect(a!.hazards.map((h) => h.code)).toEqual(["held-too-long"]);
    // One hazard object for equal hazards (100,000 locks past the limit kept 100,000 equal copies).
    expect(b!.hazards[0]).toBe(a!.hazards[0]);
    // Read again unchanged, the revised lock is not sent again: its digest, made at this comparison, matches.
    const again = t.apply([other("L1", T + 60_001), other("L2", T + 60_001)], []);
    expect(again.upserts).toEqual([]);
    expect(again.events).toEqual([]);
  });

  it("looks only at the locks whose moment has come, not at every tracked lock", () => {
    // historyHazards and nextHazardChangeMs read maxHoldMs once per lock they look at.
    let looks = 0;
    const history = {
      get maxHoldMs() {
        looks++;
        return 15 * 60_000;
      },
      rememberMs: 5 * 60_000,
    };
    const t = new LockTracker({ agentId: "a1", newId: () => `id-${++n}-xxxxxxxx`, history });
    const many = Array.from({ length: 1000 }, (_, i) => obs(`owner-${i}-0123456789`, null, T, { id: `L${i}` }));
    t.apply(many, []);
    t.reviseHazards(T + 1000); // the first call puts every lock in the heap once
    looks = 0;
    for (let s = 2; s < 60; s++) expect(t.reviseHazards(T + s * 1000).upserts).toEqual([]);
    expect(looks).toBe(0);
    expect(t.reviseHazards(T + 15 * 60_000 + 1).upserts).toHaveLength(1000);
  });
});
