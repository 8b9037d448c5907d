/**
 * When each known lock's lease ends: a binary min-heap of (deadline, key), one entry per lock, so the agent needs
 * one timer for all of them. An expired key is announced by the server only when it actually deletes it, which
 * can lag by seconds on a server with many volatile keys, so the agent re-reads each lock itself at its lease end.
 * The tracker keeps one too, keyed by lock id: when time alone next changes a lock's history hazards.
 *
 * Entries are never removed from the middle: a renewed or deleted lock leaves a stale entry behind, and the owner
 * checks each popped entry against the lock's current deadline (`isCurrent`). `compact` drops stale entries when
 * they outnumber the live ones, so the heap stays within twice the number of locks.
 */
export class DeadlineHeap {
  private readonly at: number[] = [];
  private readonly keys: string[] = [];

  get size(): number {
    return this.at.length;
  }

  push(atMs: number, key: string): void {
    this.at.push(atMs);
    this.keys.push(key);
    this.up(this.at.length - 1);
  }

  /** The earliest deadline, or null when empty. */
  peek(): number | null {
    return this.at.length > 0 ? this.at[0]! : null;
  }

  /** Removes and returns the entries due at or before nowMs, earliest first: all of them, or the first `limit`. */
  popDue(nowMs: number, limit = Infinity): Array<{ atMs: number; key: string }> {
    const out: Array<{ atMs: number; key: string }> = [];
    while (out.length < limit && this.at.length > 0 && this.at[0]! <= nowMs) out.push(this.pop());
    return out;
  }

  /** Keeps only the entries `isCurrent` approves (the lock's deadline is still this one). */
  compact(isCurrent: (atMs: number, key: string) => boolean): void {
    const entries = this.at.map((a, i) => [a, this.keys[i]!] as const).filter(([a, k]) => isCurrent(a, k));
    this.at.length = 0;
    this.keys.length = 0;
    for (const [a, k] of entries) this.push(a, k);
  }

  private pop(): { atMs: number; key: string } {
    const top = { atMs: this.at[0]!, key: this.keys[0]! };
    const lastAt = this.at.pop()!;
    const lastKey = this.keys.pop()!;
    if (this.at.length > 0) {
      this.at[0] = lastAt;
      this.keys[0] = lastKey;
      this.down(0);
    }
    return top;
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.at[parent]! <= this.at[i]!) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.at.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.at[l]! < this.at[m]!) m = l;
      if (r < n && this.at[r]! < this.at[m]!) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(a: number, b: number): void {
    [this.at[a], this.at[b]] = [this.at[b]!, this.at[a]!];
    [this.keys[a], this.keys[b]] = [this.keys[b]!, this.keys[a]!];
  }
}
