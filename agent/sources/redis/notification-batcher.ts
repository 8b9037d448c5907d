/**
 * Collects keys from keyspace notifications and hands them over in batches: a burst of changes (a client taking
 * a hundred locks) becomes one pipelined read, and at most one read runs at a time per node.
 */
export class NotificationBatcher {
  private pending = new Map<string, Buffer>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;

  constructor(
    private readonly flush: (keys: Buffer[]) => Promise<void>,
    private readonly delayMs = 5,
    /** Beyond this many pending keys the rest waits for the next poll, which reads everything anyway. */
    private readonly maxPending = 10_000,
    /** Called when a key is dropped for the bound: in track mode the next poll must then re-read everything. */
    private readonly onOverflow?: () => void,
  ) {}

  add(key: Buffer): void {
    if (this.pending.size >= this.maxPending && !this.pending.has(key.toString("latin1"))) {
      this.onOverflow?.();
      return;
    }
    this.pending.set(key.toString("latin1"), key);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.running) return;
    this.timer = setTimeout(() => void this.run(), this.delayMs);
  }

  private async run(): Promise<void> {
    this.timer = null;
    if (this.pending.size === 0) return;
    const keys = [...this.pending.values()];
    this.pending = new Map();
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
