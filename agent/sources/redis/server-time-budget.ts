/**
 * A budget of the watched server's time for lockscope's own commands: by default 1% of one Redis core. The cost
 * of each command batch is measured as its reply time (send to last reply), an upper bound of the server time it
 * took (it includes the network and the agent's own parsing), so the budget errs on the side of the server.
 *
 * A token bucket: the allowance grows by `fraction` of the wall time that passes, up to one second's worth of it;
 * spending may drive it negative (a read that must happen, such as a lock whose lease ended, is never refused), and
 * optional work (the next SCAN step, a sweep slice) waits until the debt is paid back.
 */
export class ServerTimeBudget {
  private tokensMs: number;
  private lastMs: number;
  private spentTotalMs = 0;

  /** fraction: share of one core (0.01 = 1%); 0 means unlimited. */
  constructor(
    readonly fraction: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.lastMs = now();
    this.tokensMs = this.capacityMs();
  }

  get unlimited(): boolean {
    return this.fraction <= 0;
  }

  /** Whether optional work may run now. */
  allows(): boolean {
    if (this.unlimited) return true;
    this.refill();
    return this.tokensMs > 0;
  }

  /** Records the measured cost of a command batch. */
  spend(ms: number): void {
    this.spentTotalMs += Math.max(0, ms);
    if (this.unlimited) return;
    this.refill();
    this.tokensMs -= Math.max(0, ms);
  }

  /** Runs fn, charging its wall time to the budget (also when it fails: the server may still have done the work). */
  async measure<T>(fn: () => Promise<T>): Promise<T> {
    const t0 = this.now();
    try {
      return await fn();
    } finally {
      this.spend(this.now() - t0);
    }
  }

  /** All time charged so far, for the source's status and the bench. */
  get spentMs(): number {
    return this.spentTotalMs;
  }

  private capacityMs(): number {
    return this.fraction * 1000;
  }

  private refill(): void {
    const t = this.now();
    this.tokensMs = Math.min(this.capacityMs(), this.tokensMs + (t - this.lastMs) * this.fraction);
    this.lastMs = t;
  }
}
