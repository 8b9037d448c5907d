import type { LiveState } from "../live-state";
import { conditionCollector, lockConditions, sourceConditions, type AlertRulesConfig, type Condition } from "./rules";

/** How long the evaluation runs before it lets the event loop turn (browsers' deliveries, API requests). */
const SLICE_MS = 4;

/** One turn of the event loop. A store on better-sqlite3 answers through microtasks only, which never yield. */
export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Marks out slices of a long pass: `due()` is null while the current slice is short, else a turn of the event loop
 * to await, after which a new slice starts.
 */
export function slicer(sliceMs: number = SLICE_MS): { due(): Promise<void> | null } {
  let start = performance.now();
  return {
    due: () => {
      if (performance.now() - start <= sliceMs) return null;
      return yieldToLoop().then(() => {
        start = performance.now();
      });
    },
  };
}

/** What the conditions read of the live state. */
export type ConditionsSource = Pick<LiveState, "trackChanges" | "entriesOf" | "heldSince" | "sources">;

/**
 * The alert conditions of the live state, kept between evaluations: each pass re-evaluates only the locks that
 * changed since the last one, plus those whose conditions move with time alone — the locks held longer than the hold
 * limit (the tail of the live state's order by hold time) and the locks with a timed waiter. Every other lock's
 * conditions cannot have changed. The answer is the same as the full pass (evaluateConditions over every lock) at the
 * same time; the work is sliced so that no stretch of it holds the event loop for more than a few milliseconds.
 */
export class LiveConditions {
  private readonly feed;
  /** The conditions of each lock id that has any. */
  private readonly byLock = new Map<string, Condition[]>();
  /** Lock ids with at least one waiter that says since when it waits (waited-too-long moves with time). */
  private readonly waiting = new Set<string>();

  constructor(
    private readonly live: ConditionsSource,
    private readonly cfg: AlertRulesConfig,
    /** How long a slice runs before the event loop turns (tests pass 0 to yield every 256 locks). */
    private readonly sliceMs: number = SLICE_MS,
  ) {
    this.feed = live.trackChanges();
  }

  async evaluate(nowMs: number): Promise<Condition[]> {
    const { cfg, live } = this;
    // Taken at once, before any yield: a lock that changes while this pass yields is in the next pass's feed.
    const todo = this.feed.take();
    if (cfg.maxHoldMs > 0 && !cfg.disabled.has("held-too-long")) {
      for (const e of live.heldSince(nowMs - cfg.maxHoldMs)) todo.add(e.lock.id);
    }
    for (const id of this.waiting) todo.add(id);
    const one = conditionCollector(cfg);
    const slice = slicer(this.sliceMs);
    let n = 0;
    for (const id of todo) {
      one.out.clear();
      let waits = false;
      for (const e of live.entriesOf(id)) {
        lockConditions(e.lock, nowMs, cfg, one.add);
        if (!waits) waits = e.lock.waiters.some((w) => w.since);
      }
      if (one.out.size > 0) this.byLock.set(id, [...one.out.values()]);
      else this.byLock.delete(id);
      if (waits && cfg.maxWaitMs > 0) this.waiting.add(id);
      else this.waiting.delete(id);
      const pause = ++n % 256 === 0 ? slice.due() : null;
      if (pause) await pause;
    }
    // Locks first, then sources, one condition per key, as the full pass collects them.
    const all = conditionCollector(cfg);
    for (const conditions of this.byLock.values()) {
      for (const c of conditions) if (!all.out.has(c.key)) all.out.set(c.key, c);
    }
    sourceConditions(live.sources(), all.add);
    return [...all.out.values()];
  }

  close(): void {
    this.feed.close();
  }
}
