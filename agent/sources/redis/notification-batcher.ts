/**
 * Collects keys from keyspace notifications and hands them over in batches: a burst of changes (a client taking
 * a hundred locks) becomes one pipelined read, and at most one read runs at a time per node.
 *
 * The bound is on new keys as much as known ones: a key dropped for it that the agent does not know yet is found
 * again only by the paced SCAN, which on a 10,000,000-key server takes hours. So it defaults to the per-source lock
 * cap (MAX_LOCKS_PER_SOURCE's default): 100,000 locks taken at once under a BCAST prefix were 80% dropped at the
 * earlier 10,000. Pending keys are kept as latin1 strings, one per key (about 100 bytes each).
 */
export const MAX_PENDING_NOTIFIED = 200_000;

export class NotificationBatcher {
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;

  constructor(
    private readonly flush: (keys: Buffer[]) => Promise<void>,
    private readonly delayMs = 5,
    /** Beyond this many pending keys the rest is dropped and `onOverflow` called. */
    private readonly maxPending = MAX_PENDING_NOTIFIED,
    /** Called when a key is dropped for the bound: in track mode the next poll must then re-read everything. */
    private readonly onOverflow?: () => void,
  ) {}

  add(key: Buffer): void {
    const k = key.toString("latin1");
    if (this.pending.size >= this.maxPending && !this.pending.has(k)) {
      this.onOverflow?.();
      return;
    }
    this.pending.add(k);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.running) return;
    this.timer = setTimeout(() => void this.run(), this.delayMs);
  }

  private async run(): Promise<void> {
    this.timer = null;
    if (this.pending.size === 0) return;
    const keys = [...this.pending].map((k) => Buffer.from(k, "latin1"));
    this.pending = new Set();
    this.running = true;
    try {
      await this.flush(keys);
    } finally {
      this.running = false;
      if (this.pending.size > 0) this.schedule();
    }
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.pending.clear();
  }
}
