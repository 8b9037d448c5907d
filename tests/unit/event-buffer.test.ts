import { describe, expect, it } from "vitest";
import type { LockEvent } from "../../lib/contract/lock";
import { CONNECTED_FACTOR, EventBuffer } from "../../agent/transport/event-buffer";

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

  it("keeps a burst beyond capacity while the dashboard is connected, up to the connected bound", () => {
    const b = new EventBuffer(3);
    // A first poll that sees many locks at once while connected: nothing dropped.
    b.push([ev(1), ev(2), ev(3), ev(4), ev(5)], true);
    expect(b.length).toBe(5);
    expect(b.dropped).toBe(0);
    const burst = Array.from({ length: 3 * CONNECTED_FACTOR }, (_, i) => ev(100 + i));
    b.push(burst, true);
    expect(b.length).toBe(3 * CONNECTED_FACTOR);
    expect(b.dropped).toBe(5);
    expect(b.peek(1)[0]!.id).toBe("event-100");
  });

  it("drops what was kept beyond capacity once the dashboard is unreachable, oldest first", () => {
    const b = new EventBuffer(3);
    b.push([ev(1), ev(2), ev(3), ev(4), ev(5)], true);
    expect(b.trim(false)).toBe(2);
    expect(b.dropped).toBe(2);
    expect(b.peek(3).map((e) => e.id)).toEqual(["event-3", "event-4", "event-5"]);
    expect(b.trim(false)).toBe(0);
  });

  it("takes a push of 200,000 events (one poll's first sighting of many locks) without a stack overflow", () => {
    const b = new EventBuffer(50_000);
    b.push(
      Array.from({ length: 200_000 }, (_, i) => ev(i)),
      true,
    );
    expect(b.length).toBe(200_000);
  });

  it("ignores acknowledgements of unknown ids", () => {
    const b = new EventBuffer(3);
    b.push([ev(1)]);
    b.acknowledge(["other"]);
    expect(b.length).toBe(1);
  });
});
