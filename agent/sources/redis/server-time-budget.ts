/**
 * A budget of the watched server's time for lockscope's own commands: by default 0.7% of one Redis core
 * (DEFAULT_SERVER_TIME_BUDGET_PERCENT). The cost
 * of each command batch is the server's own account of such commands (CommandCosts) when known and smaller, else
 * its reply time (send to last reply), an upper bound of the server time it took (it includes the network and the
 * agent's own waiting and parsing), so the budget errs on the side of the server.
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

  /**
   * A budget for one kind of optional work inside this one (the safety sweep): `part` of its share, on the same
   * clock. The work charges both; it runs only while both allow it, so the rest of the share stays for the others.
   */
  portion(part: number): ServerTimeBudget {
    return new ServerTimeBudget(this.fraction * part, this.now);
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
   * CommandCosts): a reply time on a busy agent host is mostly the agent's own waiting and parsing. `charged`
   * hears what was charged, so it can be settled against the server's account later (`correct`).
   */
  async measure<T>(fn: () => Promise<T>, estimateMs?: number, charged?: (ms: number) => void): Promise<T> {
    const t0 = this.now();
    try {
      return await fn();
    } finally {
      const wall = this.now() - t0;
      const ms = estimateMs !== undefined && estimateMs < wall ? estimateMs : wall;
      this.spend(ms);
      charged?.(ms);
    }
  }

  /**
   * Gives back what an earlier charge overstated (a reply time charged before the server's account of the command
   * was known). The allowance still never exceeds one second's worth.
   */
  refund(ms: number): void {
    if (!(ms > 0)) return;
    this.spentTotalMs = Math.max(0, this.spentTotalMs - ms);
    if (this.unlimited) return;
    this.refill();
    this.tokensMs = Math.min(this.capacityMs(), this.tokensMs + ms);
  }

  /** Applies a correction from the server's account: more to charge (positive) or given back (negative). */
  correct(ms: number): void {
    if (ms > 0) this.spend(ms);
    else this.refund(-ms);
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

/** One command's line of INFO commandstats: totals since the server started or its statistics were reset. */
export interface CommandAccount {
  calls: number;
  usec: number;
  usecPerCall: number;
}

/**
 * The calls, usec and usec_per_call of each command in INFO commandstats; lines that do not parse are skipped.
 * Sample (Redis 7.0):
 *   # Commandstats
 *   cmdstat_scan:calls=1001,usec=812345,usec_per_call=811.53,rejected_calls=0,failed_calls=0
 *   cmdstat_type:calls=10000,usec=4567,usec_per_call=0.46,rejected_calls=0,failed_calls=0
 */
export function parseCommandStats(info: string): Map<string, CommandAccount> {
  const out = new Map<string, CommandAccount>();
  for (const m of info.matchAll(/^cmdstat_([a-z0-9|_-]+):calls=(\d+),usec=(\d+),usec_per_call=([0-9.]+)/gm)) {
    const a = { calls: Number(m[2]), usec: Number(m[3]), usecPerCall: Number(m[4]) };
    if (Number.isFinite(a.calls) && Number.isFinite(a.usec) && Number.isFinite(a.usecPerCall)) out.set(m[1]!, a);
  }
  return out;
}

/**
 * Calls of a command between two reads of INFO commandstats below which the interval's own average is too noisy to
 * use (one slow call among three): the average since the server started stands for it then.
 */
const MIN_INTERVAL_CALLS = 10;

/**
 * The COUNT the server's per-call account of SCAN is taken to stand for until lockscope's own steps are in it
 * (SCAN_COUNT's default; the account may come from another client's steps, then it is settled at the next read).
 */
const ASSUMED_SCAN_COUNT = 1000;

/** The smallest COUNT a sized SCAN step asks for: Redis's own default. */
const MIN_SCAN_COUNT = 10;

/**
 * What commandstats leaves out: reading and parsing the request, writing the reply (about a microsecond per small
 * pipelined command here). Without it the agent's measured share of the server's CPU came out at 1.2% for a 1%
 * budget (bench, 1 M keys).
 */
const PER_COMMAND_USEC = 1;

/**
 * What lockscope sends that the budget charges, each counted in its natural unit: keys asked by SCAN steps (their
 * COUNTs), keys read (TYPE, PTTL and a bounded read of two commands each), PUBSUB NUMSUB calls, keys fingerprinted
 * (one EVALSHA each), EXISTS calls (the sweep's check of a lock's companion keys, a few keys each).
 */
export type CommandKind = "scan" | "read" | "numsub" | "fingerprint" | "exists";

/**
 * The server's own account of what lockscope's commands cost, from INFO commandstats: the time per call of each
 * command, over all clients (lockscope's calls dominate those of SCAN, TYPE and PUBSUB NUMSUB on most servers),
 * between the last two reads (the average since the server started when the interval ran too few calls).
 *
 * Every charge is an estimate: until the server has run a command and INFO has been read after it, the reply time
 * (under CPU contention mostly the agent's own waiting: a 60 ms NUMSUB reply for 5 µs of server time is 6 s of a 1%
 * budget); after that, the last interval's time per call, while the calls now sent may cost more (the account is
 * the time spent inside each command, so a server that shares its cores with busy processes is charged the time it
 * waited for one: with the unit tests running beside it, one test run's SCAN steps averaged 1,355 µs against 870 to
 * 960 in the three runs around it). So each read of INFO also settles what was charged since the last one at
 * that interval's own rate (`update` returns the difference): over time the budget follows the server's account,
 * not the first estimate of it.
 */
export class CommandCosts {
  private usec: Map<string, number> = new Map();
  /** Each command's totals at the last read, to take the next interval's time per call from. */
  private totals: Map<string, CommandAccount> = new Map();
  /** Charged since the last read, per kind: units, batches (calls of `measure`) and ms. */
  private readonly pending = new Map<CommandKind, { units: number; calls: number; chargedMs: number }>();
  /**
   * The mean COUNT of lockscope's SCAN steps in the last interval that had any: the server's account is per call,
   * and a step's cost grows with its COUNT (REDIS_SCAN_STEP_US sizes it), so a step is charged per key asked.
   */
  private scanCountPerCall = ASSUMED_SCAN_COUNT;
  /** Whether a reply time was charged since the last read for want of an account. */
  private provisional = false;

  /**
   * Reads the server's account; returns what the charges since the last read fell short of it (positive: to charge
   * as well) or overstated it (negative: to give back).
   */
  update(info: string): number {
    const parsed = parseCommandStats(info);
    if (parsed.size > 0) {
      const rates = new Map<string, number>();
      for (const [name, a] of parsed) {
        const before = this.totals.get(name);
        // Fewer calls than at the last read: the statistics were reset (CONFIG RESETSTAT), the totals are all new.
        const since = before && a.calls >= before.calls ? before : { calls: 0, usec: 0 };
        const calls = a.calls - since.calls;
        rates.set(name, calls >= MIN_INTERVAL_CALLS ? (a.usec - since.usec) / calls : a.usecPerCall);
      }
      this.usec = rates;
      this.totals = parsed;
    }
    const scan = this.pending.get("scan");
    if (scan && scan.calls > 0) this.scanCountPerCall = scan.units / scan.calls;
    let correction = 0;
    for (const [kind, p] of this.pending) {
      const est = this.estimateMs(kind, p.units, p.calls);
      if (est !== undefined) correction += est - p.chargedMs;
    }
    // What the read does not list (a proxy that hides a command, a refused INFO) stands as charged: one read after
    // the commands ran either knows them or never will, so INFO is not read again early for them.
    this.pending.clear();
    this.provisional = false;
    return correction;
  }

  /**
   * Whether INFO should be read again soon (within a second, not ten): a reply time was charged for want of an
   * account, or more than `bindingMs` was charged since the last read (the budget binds: its estimates matter).
   */
  awaiting(bindingMs: number): boolean {
    if (this.provisional) return true;
    let ms = 0;
    for (const p of this.pending.values()) ms += p.chargedMs;
    return ms > bindingMs;
  }

  /** INFO commandstats refused or failed: the charges stand. */
  forget(): void {
    this.pending.clear();
    this.provisional = false;
  }

  /**
   * `chargedMs` was charged for `units` of `kind`: at the reply time for want of an account (`provisional`), else
   * at the estimate. Settled at the next read.
   */
  charged(kind: CommandKind, units: number, chargedMs: number, provisional: boolean): void {
    const p = this.pending.get(kind) ?? { units: 0, calls: 0, chargedMs: 0 };
    p.units += units;
    p.calls += 1;
    p.chargedMs += chargedMs;
    this.pending.set(kind, p);
    if (provisional) this.provisional = true;
  }

  /**
   * The server time of `units` of `kind` sent in `calls` batches, in ms, or undefined while the server has not
   * accounted for it. SCAN's units are keys asked (the steps' COUNTs), one step a call.
   */
  estimateMs(kind: CommandKind, units: number, calls = 1): number | undefined {
    switch (kind) {
      case "scan": {
        const perKey = this.scanUsecPerKey();
        return perKey === undefined ? undefined : (perKey * 1.2 * units + calls * PER_COMMAND_USEC) / 1000;
      }
      case "read":
        return this.readMs(units);
      case "numsub":
        // Redis 7 counts subcommands on their own line; Redis 6 counts every PUBSUB call as one.
        return this.perCall(this.usec.has("pubsub|numsub") ? "pubsub|numsub" : "pubsub", 1.2, units);
      case "fingerprint":
        return this.perCall("evalsha", 1, units);
      case "exists":
        return this.perCall("exists", 1, units);
    }
  }

  /** One SCAN step of `count` keys, in ms (plus a fifth for writing its reply of up to COUNT names). */
  scanMs(count = ASSUMED_SCAN_COUNT): number | undefined {
    return this.estimateMs("scan", count);
  }

  /**
   * The COUNT of a SCAN step whose own time on the server (its commandstats time, without the reply) is about
   * `targetUsec`, between MIN_SCAN_COUNT and `max`; undefined while the server has not accounted for any SCAN.
   */
  scanCountFor(targetUsec: number, max: number): number | undefined {
    const perKey = this.scanUsecPerKey();
    if (perKey === undefined) return undefined;
    if (!(perKey > 0)) return max;
    return Math.max(Math.min(MIN_SCAN_COUNT, max), Math.min(max, Math.floor(targetUsec / perKey)));
  }

  /**
   * Reading n keys: TYPE, PTTL and a bounded read of two commands each (counted at the TYPE+PTTL rate: a
   * GETRANGE of a few hundred bytes or a first HSCAN page of a small hash costs about the same), in ms. A new
   * short string is read with PTTL and GETRANGE only (redis-client.ts), so a server may not have run TYPE yet:
   * PTTL's rate then stands for it (an overcharge of such reads, never an undercharge).
   */
  readMs(n: number): number | undefined {
    const p = this.usec.get("pttl");
    const t = this.usec.get("type") ?? p;
    return t === undefined || p === undefined ? undefined : (n * (2 * (t + p) + 4 * PER_COMMAND_USEC)) / 1000;
  }

  /** `units` calls of one command at its average (times `replyFactor` for a reply that grows with the call). */
  /** SCAN's server time per key asked, in µs (its account is per call: a call is a step of the last mean COUNT). */
  private scanUsecPerKey(): number | undefined {
    const v = this.usec.get("scan");
    return v === undefined ? undefined : v / this.scanCountPerCall;
  }

  private perCall(command: string, replyFactor: number, units: number): number | undefined {
    const v = this.usec.get(command);
    return v === undefined ? undefined : (units * (v * replyFactor + PER_COMMAND_USEC)) / 1000;
  }
}
