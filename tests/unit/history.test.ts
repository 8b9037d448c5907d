import { describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { isTakeover, resourceHistory, topContended } from "../../lib/server/history";
import { rollup } from "../../lib/server/store";

const T = Date.parse("2026-01-01T10:00:00Z");
let n = 0;
function ev(type: LockEvent["type"], owner: string, atMs: number, detail?: LockEvent["detail"]): LockEvent {
  return {
    id: `ev-${++n}-xxxxxxxx`,
    agentId: "a1",
    type,
    lockId: "L1",
    backend: "redis",
    source: "redis://127.0.0.1:1/0",
    resource: "semaphore:pool",
    owner,
    at: new Date(atMs).toISOString(),
    ...(detail ? { detail } : {}),
  };
}

/** A healthy 2-permit semaphore: 50 rotations, each a permit released and another acquired. */
const rotations: LockEvent[] = Array.from({ length: 50 }, (_, i) => [
  ev("released", `p${i}`, T + i * 1000, { permit: true, heldMs: 2000 }),
  ev("acquired", `p${i + 2}`, T + i * 1000, { permit: true }),
]).flat();

describe("takeovers are only new owners after the previous lease ran out", () => {
  it("isTakeover", () => {
    expect(isTakeover(ev("owner-changed", "b", T, { afterExpiry: true }))).toBe(true);
    expect(isTakeover(ev("owner-changed", "b", T, { afterExpiry: false }))).toBe(false);
    expect(isTakeover(ev("acquired", "b", T, { permit: true }))).toBe(false);
  });

  it("the rollup counts a quick handover as a release and an acquire, a takeover as a takeover", () => {
    const [row] = rollup([
      ev("owner-changed", "b", T, { afterExpiry: false, heldMs: 100 }),
      ev("owner-changed", "c", T + 1, { afterExpiry: true, heldMs: 100 }),
    ]);
    expect(row).toMatchObject({ acquisitions: 2, releases: 1, ownerChanges: 1 });
  });

  it("a rotating semaphore is never ranked by takeovers", () => {
    const rows = rollup(rotations);
    expect(rows[0]).toMatchObject({ acquisitions: 50, releases: 50, ownerChanges: 0 });
    const top = topContended(rows, 3_600_000);
    expect(top.resources[0]).toMatchObject({ resource: "semaphore:pool", ownerChanges: 0 });
    const h = resourceHistory("semaphore:pool", rotations, 3_600_000, T + 3_600_000);
    expect(h.buckets.reduce((s, b) => s + b.ownerChanges, 0)).toBe(0);
  });

  it("the holder timeline closes each permit's own entry", () => {
    const events = [
      ev("acquired", "p1", T, { permit: true }),
      ev("acquired", "p2", T + 100, { permit: true }),
      ev("released", "p1", T + 200, { permit: true, heldMs: 200 }),
    ];
    const h = resourceHistory("semaphore:pool", events, 3_600_000, T + 1000);
    expect(h.timeline.map((t) => [t.owner, t.to])).toEqual([
      ["p1", new Date(T + 200).toISOString()],
      ["p2", null],
    ]);
  });
});
