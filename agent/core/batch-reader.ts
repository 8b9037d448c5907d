/**
 * Reads items in batches while the caller goes on producing them (a SCAN pass finding lock keys): a batch is read
 * as soon as it is full, with at most `maxInFlight` reads running at once (full batches beyond that wait their
 * turn). `finish` reads the last, partial batch and returns every batch's result in the order the items were
 * added. A failed read fails `finish`, once every read already started has settled; batches still waiting are then
 * never read.
 */
export class BatchReader<T, R> {
  private current: T[] = [];
  private readonly waiting: Array<{ batch: T[]; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private readonly results: Array<Promise<R>> = [];
  private inFlight = 0;
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly read: (batch: T[]) => Promise<R>,
    private readonly batchSize: number,
    private readonly maxInFlight: number,
  ) {
    if (!(batchSize >= 1) || !(maxInFlight >= 1)) throw new Error("BatchReader: batchSize and maxInFlight must be ≥ 1");
  }

  add(item: T): void {
    this.current.push(item);
    if (this.current.length >= this.batchSize) this.close();
  }

  /** Reads what is left, waits for every read, and returns the results in order (or throws the first failure). */
  async finish(): Promise<R[]> {
    this.close();
    const settled = await Promise.allSettled(this.results);
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<R>).value);
  }

  private close(): void {
    if (this.current.length === 0) return;
    const batch = this.current;
    this.current = [];
    const result = new Promise<R>((resolve, reject) => this.waiting.push({ batch, resolve, reject }));
    // finish() sees the failure; until then no rejection may go unhandled.
    result.catch(() => undefined);
    this.results.push(result);
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      if (this.failure) {
        next.reject(this.failure.error);
        continue;
      }
      this.inFlight++;
      // An async wrapper: a read that throws at once fails like one that rejects, and the read starts now.
      const run = async () => this.read(next.batch);
      run()
        .then(next.resolve, (error: unknown) => {
          this.failure ??= { error };
          next.reject(error);
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}
