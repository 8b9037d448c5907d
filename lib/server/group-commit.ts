import type { LockEvent } from "../contract/lock";
import type { HistoryStore } from "./store";

/**
 * Group commit for many agents: messages that arrive while the store is busy are written together, in one store
 * write, instead of one write per agent message. With twenty agents sending at once, one write per message meant
 * twenty statements (and, on PostgreSQL, twenty pooled connections) competing for the same two cores; each waited
 * 1 to 2.5 s. Coalesced, the statements are fewer and larger, and the fixed cost of each (round trip, parse, plan,
 * commit and its fsync) is paid once per group.
 *
 * Nothing about idempotency changes: the merged write is the same idempotent saveEvents (ON CONFLICT DO NOTHING on
 * the agent-assigned id), and each caller is answered only after the write that holds its events committed. A
 * failed write fails every message of its group, so each agent keeps its events and sends them again. A group
 * never holds more than `maxEvents` (the store writes that many in one statement), except a single message larger
 * than that, which goes alone, as before.
 */
export interface GroupCommitOptions {
  /** Events per merged write at most. */
  maxEvents: number;
  /** Merged writes in flight at once (1 for SQLite's single writer; more lets PostgreSQL use both cores). */
  concurrency: number;
  /** Called with each merged write's number of messages and events (metrics). */
  onGroup?: (messages: number, events: number) => void;
}

interface Pending {
  events: readonly LockEvent[];
  resolve(r: { stored: string[]; fresh: LockEvent[] }): void;
  reject(err: unknown): void;
}

export function withGroupCommit(store: HistoryStore, opts: GroupCommitOptions): HistoryStore {
  const queue: Pending[] = [];
  let inFlight = 0;

  const take = (): Pending[] => {
    const group: Pending[] = [queue.shift()!];
    let size = group[0]!.events.length;
    while (queue.length > 0 && size + queue[0]!.events.length <= opts.maxEvents) {
      const next = queue.shift()!;
      size += next.events.length;
      group.push(next);
    }
    return group;
  };

  const pump = () => {
    while (inFlight < opts.concurrency && queue.length > 0) {
      const group = take();
      inFlight++;
      void write(group).finally(() => {
        inFlight--;
        pump();
      });
    }
  };

  const write = async (group: Pending[]) => {
    const all = group.length === 1 ? group[0]!.events : group.flatMap((p) => p.events);
    opts.onGroup?.(group.length, all.length);
    let result: { stored: string[]; fresh: LockEvent[] };
    try {
      result = await store.saveEvents(all);
    } catch (err) {
      for (const p of group) p.reject(err);
      return;
    }
    if (group.length === 1) return group[0]!.resolve(result);
    // Split the answer per message. An event sent in two messages of one group (a replay racing its original) is
    // fresh for the first only, so it is shown and counted once.
    const fresh = new Set(result.fresh.map((e) => e.id));
    for (const p of group) {
      const mine: LockEvent[] = [];
      for (const e of p.events) {
        if (fresh.delete(e.id)) mine.push(e);
      }
      p.resolve({ stored: [...new Set(p.events.map((e) => e.id))], fresh: mine });
    }
  };

  return {
    ...store,
    saveEvents(events) {
      if (events.length === 0) return store.saveEvents(events);
      return new Promise((resolve, reject) => {
        queue.push({ events, resolve, reject });
        pump();
      });
    },
  };
}
