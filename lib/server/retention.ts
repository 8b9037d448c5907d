import type { HistoryStore } from "./store";

const DAY = 86_400_000;

/**
 * Prunes raw events past RETENTION_DAYS and aggregates past ROLLUP_RETENTION_DAYS, in small batches with a yield
 * between them, so a large backlog never blocks the server (SQLite writes are synchronous in better-sqlite3).
 */
export class RetentionPruner {
  private timer: NodeJS.Timeout | null = null;
  private running = false;

  constructor(
    private readonly store: HistoryStore,
    private readonly opts: { eventDays: number; rollupDays: number; log: (line: string) => void; batch?: number },
  ) {}

  start(intervalMs = 10 * 60_000): void {
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async runOnce(now = Date.now()): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    let removed = 0;
    try {
      const before = new Date(now - this.opts.eventDays * DAY);
      for (;;) {
        const n = await this.store.pruneEvents(before, this.opts.batch ?? 500);
        removed += n;
        if (n === 0) break;
        await new Promise((r) => setImmediate(r));
      }
      removed += await this.store.pruneAggregates(new Date(now - this.opts.rollupDays * DAY));
      if (removed > 0) this.opts.log(`retention: pruned ${removed} old rows`);
    } catch (err) {
      this.opts.log(`retention: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.running = false;
    }
    return removed;
  }
}
