/**
 * A fixed-window counter per key (actor, client address). Enough to stop a script or a frantic double-click from
 * hammering force-release or the sign-in form; not a distributed limiter.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one attempt; returns 0 when allowed, else the ms until the window resets. */
  take(key: string): number {
    const t = this.now();
    const w = this.windows.get(key);
    if (!w || t - w.start >= this.windowMs) {
      this.windows.set(key, { start: t, count: 1 });
      if (this.windows.size > 10_000) this.sweep(t);
      return 0;
    }
    if (w.count >= this.limit) return w.start + this.windowMs - t;
    w.count++;
    return 0;
  }

  /** The ms until `key` may try again (0 when it may), without counting an attempt. */
  wait(key: string): number {
    const t = this.now();
    const w = this.windows.get(key);
    if (!w || t - w.start >= this.windowMs || w.count < this.limit) return 0;
    return w.start + this.windowMs - t;
  }

  private sweep(t: number): void {
    for (const [k, w] of this.windows) if (t - w.start >= this.windowMs) this.windows.delete(k);
  }
}
