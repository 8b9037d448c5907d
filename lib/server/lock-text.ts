/**
 * The substring filter's index: every lock's lower-cased resource and owner in one string, searched with indexOf, so
 * a filter that matches a few locks out of 100,000 reads one flat string instead of every lock object (a pass over
 * the scattered entries took 35 to 110 ms per keystroke in the dashboard, against about 5 ms in a fresh process).
 * Built by the first search that needs it and patched as locks come and go: a lock added since the build is checked
 * on its own, one removed is skipped, and the index is dropped once those are many (the next search rebuilds it).
 * Pure.
 */
import type { IndexedLock } from "./lock-index";

/** A byte no search can meet across two fields: a query holding it is answered without the index. */
const SEP = "\u0000";

export class LockText {
  private text = "";
  /** Where each built entry's segment starts in `text`, ascending. */
  private starts = new Int32Array(0);
  private built: IndexedLock[] = [];
  private readonly fresh = new Set<IndexedLock>();
  private readonly gone = new Set<IndexedLock>();
  private valid = false;

  add(e: IndexedLock): void {
    if (!this.valid) return;
    this.fresh.add(e);
    this.dropIfStale();
  }

  remove(e: IndexedLock): void {
    if (!this.valid) return;
    if (!this.fresh.delete(e)) this.gone.add(e);
    this.dropIfStale();
  }

  /**
   * Once many locks changed since the build, the index is dropped, not kept until the next search: it would hold
   * every removed entry (and its lock) alive, the whole old fleet after enough churn. The next search rebuilds it.
   */
  private dropIfStale(): void {
    if (this.fresh.size + this.gone.size <= 1000 + this.built.length / 8) return;
    this.text = "";
    this.starts = new Int32Array(0);
    this.built = [];
    this.fresh.clear();
    this.gone.clear();
    this.valid = false;
  }

  /**
   * The locks whose resource or owner contains `q` (lower-cased), each once, in no particular order; null when more
   * than `max` match or `q` cannot be searched in the joined text. `all` reads every current entry, for a (re)build.
   */
  search(q: string, max: number, all: () => readonly IndexedLock[]): IndexedLock[] | null {
    if (q.includes(SEP)) return null;
    if (!this.valid) this.build(all());
    const out: IndexedLock[] = [];
    const { text, starts, built, gone } = this;
    let pos = text.indexOf(q);
    while (pos >= 0) {
      // The segment holding the match: the last start at or before it.
      let lo = 0;
      let hi = starts.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (starts[mid]! <= pos) lo = mid + 1;
        else hi = mid;
      }
      const i = lo - 1;
      const e = built[i]!;
      if (gone.size === 0 || !gone.has(e)) {
        if (out.length >= max) return null;
        out.push(e);
      }
      // On to the next lock: a resource and an owner that both match count once.
      pos = i + 1 < starts.length ? text.indexOf(q, starts[i + 1]!) : -1;
    }
    for (const e of this.fresh) {
      if (!e.resourceLc.includes(q) && !e.ownerLc.includes(q)) continue;
      if (out.length >= max) return null;
      out.push(e);
    }
    return out;
  }

  private build(all: readonly IndexedLock[]): void {
    const parts: string[] = new Array<string>(all.length);
    const starts = new Int32Array(all.length);
    let at = 0;
    for (let i = 0; i < all.length; i++) {
      const e = all[i]!;
      starts[i] = at;
      const part = e.resourceLc + SEP + e.ownerLc + SEP;
      parts[i] = part;
      at += part.length;
    }
    this.text = parts.join("");
    this.starts = starts;
    this.built = all.slice();
    this.fresh.clear();
    this.gone.clear();
    this.valid = true;
  }
}
