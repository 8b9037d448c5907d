/**
 * Flood protection between the sources and the dashboard: at most `maxPerSource` locks of one source are
 * published. Someone who writes a million keys matching the lock patterns gets "showing N of M", a
 * `too-many-locks` hazard on the source, and a bounded stream, never a dashboard buried under every key. Pure.
 *
 * The locks over the cap are remembered (references to what the sources already hold) and counted; when a
 * published lock goes, the oldest waiting one takes its place.
 */
import type { Hazard, Lock, LockEvent, SourceStatus } from "../../lib/contract/lock";

export const DEFAULT_MAX_LOCKS_PER_SOURCE = 200_000;

interface PerSource {
  published: Set<string>;
  /** Over the cap, in arrival order, with their latest state. */
  waiting: Map<string, Lock>;
}

export interface CappedOutput {
  events: LockEvent[];
  upserts: Lock[];
  removed: string[];
}

export class SourceCap {
  private readonly bySource = new Map<string, PerSource>();

  constructor(private readonly maxPerSource: number = DEFAULT_MAX_LOCKS_PER_SOURCE) {}

  private of(source: string): PerSource {
    let s = this.bySource.get(source);
    if (!s) {
      s = { published: new Set(), waiting: new Map() };
      this.bySource.set(source, s);
    }
    return s;
  }

  /** What of one batch of changes goes to the dashboard. Events of locks over the cap are held back with them. */
  filter(events: readonly LockEvent[], upserts: readonly Lock[], removed: readonly string[]): CappedOutput {
    const out: CappedOutput = { events: [], upserts: [], removed: [] };
    // Locks the dashboard must not hear of in this batch: over the cap, or gone while over it.
    const heldBack = new Set<string>();
    for (const l of upserts) {
      const s = this.of(l.source);
      if (s.published.has(l.id)) out.upserts.push(l);
      else if (s.published.size < this.maxPerSource) {
        s.published.add(l.id);
        out.upserts.push(l);
      } else {
        s.waiting.set(l.id, l); // a known one keeps its place in the queue, with its latest state
        heldBack.add(l.id);
      }
    }
    const freed = new Set<PerSource>();
    for (const id of removed) {
      for (const s of this.bySource.values()) {
        if (s.published.delete(id)) {
          out.removed.push(id);
          freed.add(s);
        } else if (s.waiting.delete(id)) heldBack.add(id);
      }
    }
    for (const s of freed) {
      while (s.published.size < this.maxPerSource && s.waiting.size > 0) {
        const [id, lock] = s.waiting.entries().next().value!;
        s.waiting.delete(id);
        s.published.add(id);
        heldBack.delete(id);
        out.upserts.push(lock);
      }
    }
    for (const e of events) {
      if (heldBack.has(e.lockId) || this.bySource.get(e.source)?.waiting.has(e.lockId)) continue;
      out.events.push(e);
    }
    return out;
  }

  /** The published part of a source's locks: what a snapshot sends. */
  locks(all: readonly Lock[]): Lock[] {
    return all.filter((l) => !this.bySource.get(l.source)?.waiting.has(l.id));
  }

  /** A source's status as the dashboard sees it: published locks, how many more are not, and the hazard. */
  status(s: SourceStatus): SourceStatus {
    const per = this.bySource.get(s.id);
    const untracked = per?.waiting.size ?? 0;
    if (untracked === 0) return s;
    const seen = per!.published.size + untracked;
    const hazard: Hazard = {
      code: "too-many-locks",
      severity: "critical",
      message:
        `${seen.toLocaleString("en")} lock keys seen, ${per!.published.size.toLocaleString("en")} shown: the agent ` +
        `publishes at most ${this.maxPerSource.toLocaleString("en")} per source (MAX_LOCKS_PER_SOURCE). A flood of ` +
        "keys matching the lock patterns, or a cap too low for this source.",
    };
    return {
      ...s,
      locks: per!.published.size,
      untracked,
      hazards: [hazard, ...(s.hazards ?? []).filter((h) => h.code !== "too-many-locks")].slice(0, 64),
    };
  }
}
