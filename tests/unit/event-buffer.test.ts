import { describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { EventBuffer } from "../../agent/transport/event-buffer";

const ev = (i: number): LockEvent => ({
  id: `event-${i}`,
  agentId: "a",
  type: "acquired",
  lockId: "L",
  backend: "redis",
  source: "s",
  resource: "r",
  owner: null,
  at: new Date(0).toISOString(),
});

describe("EventBuffer", () => {
  it("keeps events until acknowledged, oldest first", () => {
    const b = new EventBuffer(10);
    b.push([ev(1), ev(2), ev(3)]);
    expect(b.peek(2).map((e) => e.id)).toEqual(["event-1", "event-2"]);
    b.acknowledge(["event-1"]);
    expect(b.peek(10).map((e) => e.id)).toEqual(["event-2", "event-3"]);
  });

  it("drops the oldest beyond capacity and counts them", () => {
    const b = new EventBuffer(3);
    b.push([ev(1), ev(2), ev(3), ev(4), ev(5)]);
    expect(b.length).toBe(3);
    expect(b.dropped).toBe(2);
    expect(b.peek(3).map((e) => e.id)).toEqual(["event-3", "event-4", "event-5"]);
  });

  it("ignores acknowledgements of unknown ids", () => {
    const b = new EventBuffer(3);
    b.push([ev(1)]);
    b.acknowledge(["other"]);
    expect(b.length).toBe(1);
  });
});
