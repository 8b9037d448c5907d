/**
 * Exactly one of several dashboards evaluates alerts and sends webhooks: the holder of a Redis lock with a lease
 * (`SET lockscope:leader <dashboard id> NX PX <lease>`, renewed by compare-and-PEXPIRE at a third of the lease).
 * When the leader dies its lease runs out and another dashboard takes the lock at its next attempt, so the
 * hand-over takes at most one lease plus one attempt interval. A leader that cannot renew (Redis unreachable, its
 * process paused past the lease) steps down before anyone else can take over.
 */
import type { Redis } from "ioredis";

export const LEADER_KEY = "lockscope:leader";

/** Renews only our own lease: a lease that ran out and was taken by another dashboard is left alone. */
const RENEW = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`;
const RESIGN = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`;

/** The commands used, so a test can count on exactly these. */
export type LeaderRedis = Pick<Redis, "set" | "eval" | "get" | "pttl">;

export interface LeaderView {
  holder: string | null;
  ttlMs: number | null;
}

export class LeaderElection {
  private leading = false;
  /** Time (local clock) until which our last successful acquire or renew guarantees the lease. */
  private validUntil = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: LeaderRedis,
    readonly id: string,
    private readonly opts: {
      leaseMs: number;
      log: (line: string) => void;
      onChange?: (leading: boolean) => void;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** True only while our lease is certainly valid: checked before each alert evaluation and webhook send. */
  isLeader(): boolean {
    return this.leading && this.now() < this.validUntil;
  }

  /** One attempt: acquire when free, renew when ours. Returns whether we lead afterwards. */
  async step(): Promise<boolean> {
    const started = this.now();
    let ours = false;
    try {
      if (this.leading) {
        ours = (await this.redis.eval(RENEW, 1, LEADER_KEY, this.id, String(this.opts.leaseMs))) === 1;
      }
      if (!ours) ours = (await this.redis.set(LEADER_KEY, this.id, "PX", this.opts.leaseMs, "NX")) === "OK";
    } catch (err) {
      this.opts.log(`leader lock: ${err instanceof Error ? err.message : String(err)}`);
      ours = false;
    }
    // The lease counts from before the command was sent, so a slow reply never stretches it.
    if (ours) this.validUntil = started + this.opts.leaseMs;
    const was = this.leading;
    this.leading = ours;
    if (ours !== was) {
      this.opts.log(ours ? `leader: this dashboard (${this.id}) evaluates alerts` : `leader: ${this.id} stepped down`);
      this.opts.onChange?.(ours);
    }
    return ours;
  }

  start(): void {
    const tick = () => {
      void this.step().finally(() => {
        if (this.timer) this.timer = setTimeout(tick, Math.max(200, Math.floor(this.opts.leaseMs / 3)));
      });
    };
    this.timer = setTimeout(tick, 0);
    this.timer.unref();
  }

  /** Stops and hands the lock over at once (shutdown), instead of making the others wait for the lease. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.leading) await this.redis.eval(RESIGN, 1, LEADER_KEY, this.id).catch(() => undefined);
    this.leading = false;
  }

  /** Who holds the lock now, for the dashboards' own view. */
  async view(): Promise<LeaderView> {
    const [holder, ttl] = await Promise.all([this.redis.get(LEADER_KEY), this.redis.pttl(LEADER_KEY)]);
    return { holder, ttlMs: ttl >= 0 ? ttl : null };
  }
}

/** The pseudo agent under which every dashboard shows the leader lock in its own view. */
export const DASHBOARDS_AGENT = "lockscope-dashboards";

/** The leader lock as a Lock of the dashboards' own view: it is a lock like any other. */
export function leaderLockSnapshot(
  view: LeaderView,
  source: string,
  since: string,
  now: string,
): import("../contract/socket").AgentSnapshot {
  const locks: import("../contract/lock").Lock[] = view.holder
    ? [
        {
          id: "lockscope-leader",
          backend: "redis",
          source,
          resource: LEADER_KEY,
          owner: view.holder,
          library: "lockscope",
          rule: "lockscope leader lease (SET NX PX, compare-and-PEXPIRE renewal)",
          ttlMs: view.ttlMs,
          holder: { dashboard: view.holder, role: "evaluates alerts and sends webhooks" },
          waiters: [],
          since,
          observedAt: now,
          kind: "string",
          valuePreview: view.holder,
          hazards: [],
          agentId: DASHBOARDS_AGENT,
        },
      ]
    : [];
  return {
    agentId: DASHBOARDS_AGENT,
    agentName: "lockscope dashboards",
    version: "dashboard",
    at: now,
    sources: [{ id: source, kind: "redis", up: true, locks: locks.length, agentId: DASHBOARDS_AGENT }],
    locks,
  };
}
