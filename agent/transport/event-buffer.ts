import type { LockEvent } from "../../lib/contract/lock";

/**
 * Events waiting for the dashboard's acknowledgement. Bounded: while the dashboard is unreachable for long, the
 * oldest events are dropped and counted rather than letting the agent grow without limit on a production host.
 */
export class EventBuffer {
  private items: LockEvent[] = [];
  dropped = 0;

  constructor(private readonly capacity: number) {}

  get length(): number {
    return this.items.length;
  }

  push(events: readonly LockEvent[]): void {
    this.items.push(...events);
    const over = this.items.length - this.capacity;
    if (over > 0) {
      this.items.splice(0, over);
      this.dropped += over;
    }
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
