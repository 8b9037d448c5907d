import { describe, expect, it } from "vitest";
import { classifyChange, DEFAULT_TOLERANCE_MS, type PreviousObservation } from "../../agent/core/classify";

const T0 = 1_000_000;
const held = (owner: string | null, ttlMs: number | null): PreviousObservation => ({ owner, ttlMs, observedAtMs: T0 });

describe("classifyChange", () => {
  const cases: Array<{
    name: string;
    prev: PreviousObservation;
    next: { owner: string | null; ttlMs: number | null; at: number } | null;
    goneAt?: number;
    want: ReturnType<typeof classifyChange>;
  }> = [
    {
      name: "unchanged, TTL counting down",
      prev: held("a", 5000),
      next: { owner: "a", ttlMs: 4000, at: T0 + 1000 },
      want: null,
    },
    {
      name: "TTL within tolerance above prediction",
      prev: held("a", 5000),
      next: { owner: "a", ttlMs: 4100, at: T0 + 1000 },
      want: null,
    },
    {
      name: "renewed: TTL jumped back up",
      prev: held("a", 5000),
      next: { owner: "a", ttlMs: 9000, at: T0 + 1000 },
      want: { type: "renewed" },
    },
    {
      name: "expiry added to a lock that had none",
      prev: held("a", null),
      next: { owner: "a", ttlMs: 9000, at: T0 + 1000 },
      want: { type: "renewed" },
    },
    {
      name: "expiry removed (PERSIST)",
      prev: held("a", 5000),
      next: { owner: "a", ttlMs: null, at: T0 + 1000 },
      want: { type: "renewed" },
    },
    {
      name: "never-expiring lock, unchanged",
      prev: held("a", null),
      next: { owner: "a", ttlMs: null, at: T0 + 1000 },
      want: null,
    },
    {
      name: "owner changed while the old lease was still valid",
      prev: held("a", 5000),
      next: { owner: "b", ttlMs: 5000, at: T0 + 1000 },
      want: { type: "owner-changed", afterExpiry: false },
    },
    {
      name: "owner changed after the old lease ran out (expired and re-acquired within one poll)",
      prev: held("a", 500),
      next: { owner: "b", ttlMs: 5000, at: T0 + 1000 },
      want: { type: "owner-changed", afterExpiry: true },
    },
    {
      name: "owner changed on a never-expiring lock",
      prev: held("a", null),
      next: { owner: "b", ttlMs: null, at: T0 + 1000 },
      want: { type: "owner-changed", afterExpiry: false },
    },
    {
      name: "gone long before its TTL: released",
      prev: held("a", 5000),
      next: null,
      goneAt: T0 + 1000,
      want: { type: "released" },
    },
    {
      name: "gone after its TTL ran out: expired",
      prev: held("a", 800),
      next: null,
      goneAt: T0 + 1000,
      want: { type: "expired" },
    },
    {
      name: "boundary: remaining lease exactly the tolerance counts as expired",
      prev: held("a", 1000 + DEFAULT_TOLERANCE_MS),
      next: null,
      goneAt: T0 + 1000,
      want: { type: "expired" },
    },
    {
      name: "boundary: one ms more than the tolerance left counts as released",
      prev: held("a", 1000 + DEFAULT_TOLERANCE_MS + 1),
      next: null,
      goneAt: T0 + 1000,
      want: { type: "released" },
    },
    {
      name: "never-expiring lock gone: released",
      prev: held("a", null),
      next: null,
      goneAt: T0 + 60_000,
      want: { type: "released" },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const next = c.next ? { owner: c.next.owner, ttlMs: c.next.ttlMs, observedAtMs: c.next.at } : null;
      expect(classifyChange(c.prev, next, c.goneAt ?? c.next?.at ?? T0)).toEqual(c.want);
    });
  }
});
