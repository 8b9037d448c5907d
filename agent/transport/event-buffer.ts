import type { LockEvent } from "../../lib/contract/lock";
import { append } from "../core/tracker";

/**
 * While the dashboard is connected the buffer holds up to this many times its capacity: a poll that first sees
 * 100,000 locks makes 100,000 "acquired" events at once, which a connected dashboard takes in about 13 s (with the
 * default capacity of 50,000, 45,000 of them were dropped). The events exist in the poll's output either way; kept,
 * they live until acknowledged (about 620 bytes each).
 */
export const CONNECTED_FACTOR = 4;

/**
 * Events waiting for the dashboard's acknowledgement. Bounded: while the dashboard is unreachable, the oldest
 * events beyond the capacity are dropped and counted rather than letting the agent grow without limit on a
 * production host; while it is connected and taking them, beyond CONNECTED_FACTOR times the capacity.
 */
export class EventBuffer {
  private items: LockEvent[] = [];
  dropped = 0;

  constructor(private readonly capacity: number) {}

  get length(): number {
    return this.items.length;
  }

  push(events: readonly LockEvent[], connected = false): void {
    append(this.items, events);
    this.trim(connected);
  }

  /** Drops the oldest events beyond the bound (see CONNECTED_FACTOR); returns how many. */
  trim(connected = false): number {
    const over = this.items.length - this.capacity * (connected ? CONNECTED_FACTOR : 1);
    if (over <= 0) return 0;
    this.items.splice(0, over);
    this.dropped += over;
    return over;
  }

  /** The oldest `n` events, still kept until acknowledged. */
  peek(n: number): LockEvent[] {
    return this.items.slice(0, n);
  }

  acknowledge(ids: readonly string[]): void {
    if (ids.length === 0) return;
    const done = new Set(ids);
    this.items = this.items.filter((e) => !done.has(e.id));
  }
}
