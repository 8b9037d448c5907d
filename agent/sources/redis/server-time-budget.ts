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

  /**
   * Runs fn, charging its wall time to the budget (also when it fails: the server may still have done the work),
   * or the server's own account of such commands when that is known and smaller (`estimateMs`, see
   * CommandCosts): a reply time on a busy agent host is mostly the agent's own waiting and parsing.
   */
  async measure<T>(fn: () => Promise<T>, estimateMs?: number): Promise<T> {
    const t0 = this.now();
    try {
      return await fn();
    } finally {
      const wall = this.now() - t0;
      this.spend(estimateMs !== undefined && estimateMs < wall ? estimateMs : wall);
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

/**
 * Sample of INFO commandstats (Redis 7.0):
 *   # Commandstats
 *   cmdstat_scan:calls=1001,usec=812345,usec_per_call=811.53,rejected_calls=0,failed_calls=0
 *   cmdstat_type:calls=10000,usec=4567,usec_per_call=0.46,rejected_calls=0,failed_calls=0
 * Returns microseconds per call by command name; lines that do not parse are skipped.
 */
export function parseUsecPerCall(info: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([a-z0-9|_-]+):calls=\d+,usec=\d+,usec_per_call=([0-9.]+)/gm)) {
    const v = Number(m[2]);
    if (Number.isFinite(v)) out.set(m[1]!, v);
  }
  return out;
}

/**
 * The server's own account of what lockscope's commands cost, from INFO commandstats: the average time per call of
 * SCAN and of the per-key reads, over all clients (lockscope's calls dominate those of SCAN and TYPE on most
 * servers). Null until known, and then the budget charges reply times.
 */
/**
 * What commandstats leaves out: reading and parsing the request, writing the reply (about a microsecond per small
 * pipelined command here). Without it the agent's measured share of the server's CPU came out at 1.2% for a 1%
 * budget (bench, 1 M keys).
 */
const PER_COMMAND_USEC = 1;

export class CommandCosts {
  private usec: Map<string, number> = new Map();

  update(info: string): void {
    const parsed = parseUsecPerCall(info);
    if (parsed.size > 0) this.usec = parsed;
  }

  /** One SCAN step, in ms (plus a fifth for writing its reply of up to COUNT names). */
  scanMs(): number | undefined {
    const v = this.usec.get("scan");
    return v === undefined ? undefined : (v * 1.2 + PER_COMMAND_USEC) / 1000;
  }

  /**
   * Reading n keys: TYPE, PTTL and a bounded read of two commands each (counted at the TYPE+PTTL rate: a
   * GETRANGE of a few hundred bytes or a first HSCAN page of a small hash costs about the same), in ms.
   */
  readMs(n: number): number | undefined {
    const t = this.usec.get("type");
    const p = this.usec.get("pttl");
    return t === undefined || p === undefined ? undefined : (n * (2 * (t + p) + 4 * PER_COMMAND_USEC)) / 1000;
  }
}
