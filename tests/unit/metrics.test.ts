import { describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { LiveState } from "../../lib/server/live-state";
import { eventKind, Metrics } from "../../lib/server/metrics";

const event = (type: LockEvent["type"], over: Partial<LockEvent> = {}): LockEvent => ({
  id: `e-${Math.random().toString(36).slice(2, 12)}`,
  agentId: "a1",
  type,
  lockId: "L1",
  backend: "redis",
  source: "redis://127.0.0.1:6379/0",
  resource: "lock:order:1",
  owner: "t",
  at: new Date(0).toISOString(),
  ...over,
});

describe("lock event metrics", () => {
  it("names a new owner after an expired lease a takeover, and leaves source events out", () => {
    expect(eventKind(event("owner-changed", { detail: { afterExpiry: true } }))).toBe("taken_over");
    expect(eventKind(event("owner-changed", { detail: { afterExpiry: false } }))).toBe("owner_changed");
    expect(eventKind(event("acquired"))).toBe("acquired");
    expect(eventKind(event("source-down"))).toBeNull();
  });

  it("counts events by backend and kind, and wait times where a backend records them, with low-cardinality labels", async () => {
    const m = new Metrics(new LiveState(), () => new Map());
    m.observeEvents([
      event("acquired"),
      event("acquired", { backend: "zookeeper", detail: { waitedMs: 2500 } }),
      event("owner-changed", { detail: { afterExpiry: true, heldMs: 1000 } }),
      event("source-up"),
    ]);
    const text = await m.registry.metrics();
    expect(text).toContain('lockscope_lock_events_total{backend="redis",kind="acquired"} 1');
    expect(text).toContain('lockscope_lock_events_total{backend="zookeeper",kind="acquired"} 1');
    expect(text).toContain('lockscope_lock_events_total{backend="redis",kind="taken_over"} 1');
    expect(text).toContain('lockscope_wait_seconds_bucket{le="5",backend="zookeeper"} 1');
    expect(text).toContain('lockscope_wait_seconds_bucket{le="1",backend="zookeeper"} 0');
    // No lock id, resource or owner in any label: one series per backend and kind, whatever the fleet's size.
    expect(text).not.toMatch(/lock:order|lockId=|resource=/);
  });
});
