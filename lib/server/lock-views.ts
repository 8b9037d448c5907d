/**
 * Browsers' subscriptions to views of the live locks: each view is a query (filter, sort) and a window of rows
 * (offset, limit). A view gets its window once, then only what changed in it plus the counts, and only when a
 * change could touch it. No socket code here: the hub passes a send function per view.
 */
import type { Lock } from "../contract/lock";
import type { ViewUpdate } from "../contract/socket";
import { currentLock, matches, type IndexedLock } from "./lock-index";
import type { LockQuery } from "./lock-query";
import type { LiveChange, LiveState } from "./live-state";

/** Sends an update; false when the client is congested (its buffer is full): the view is retried later. */
export type ViewSend = (update: ViewUpdate) => boolean;

interface View {
  viewId: string;
  query: LockQuery;
  send: ViewSend;
  seq: number;
  /** What the browser holds: the entry objects sent (an upsert makes a new entry, so identity means "unchanged"). */
  window: Map<string, IndexedLock>;
  order: string[];
  total: number;
  counts: string;
  /** Never sent, or a send was refused: the next flush sends the whole window. */
  needsFull: boolean;
  dirty: boolean;
}

/** Views per browser tab: a page needs a handful (table, header counts, a detail); more is a bug or abuse. */
export const MAX_VIEWS_PER_CLIENT = 16;
/** Changes are coalesced: a view is recomputed at most this often, well inside the 100 ms delivery target. */
export const MIN_FLUSH_INTERVAL_MS = 40;

export class LockViews {
  private readonly clients = new Map<string, Map<string, View>>();
  private timer: NodeJS.Timeout | null = null;
  private lastFlushMs = 0;

  constructor(
    private readonly live: LiveState,
    private readonly now: () => number = Date.now,
  ) {}

  get viewCount(): number {
    let n = 0;
    for (const views of this.clients.values()) n += views.size;
    return n;
  }

  /** Adds or replaces a view and sends its window at once. Returns an error when the client has too many views. */
  subscribe(clientId: string, viewId: string, query: LockQuery, send: ViewSend): string | null {
    let views = this.clients.get(clientId);
    if (!views) {
      views = new Map();
      this.clients.set(clientId, views);
    }
    const old = views.get(viewId);
    if (!old && views.size >= MAX_VIEWS_PER_CLIENT) return `at most ${MAX_VIEWS_PER_CLIENT} views per connection`;
    const view: View = {
      viewId,
      query,
      send,
      // Sequence numbers keep increasing across a re-subscribe, so a late update of the old window is ignored.
      seq: old?.seq ?? 0,
      window: new Map(),
      order: [],
      total: 0,
      counts: "",
      needsFull: true,
      dirty: true,
    };
    views.set(viewId, view);
    this.refresh(view);
    if (view.dirty) this.schedule(250);
    return null;
  }

  unsubscribe(clientId: string, viewId: string): void {
    this.clients.get(clientId)?.delete(viewId);
  }

  dropClient(clientId: string): void {
    this.clients.delete(clientId);
  }

  /** Marks the views a change can touch, and schedules one coalesced flush. */
  onChange(change: LiveChange): void {
    let any = false;
    for (const views of this.clients.values()) {
      for (const v of views.values()) {
        if (v.dirty || touches(v, change)) {
          v.dirty = true;
          any = true;
        }
      }
    }
    if (any) this.schedule();
  }

  /** Recomputes every dirty view now and sends what changed. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.lastFlushMs = this.now();
    let retry = false;
    for (const views of this.clients.values()) {
      for (const v of views.values()) {
        if (!v.dirty) continue;
        this.refresh(v);
        if (v.dirty) retry = true;
      }
    }
    if (retry) this.schedule(250);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(minDelay = 0): void {
    if (this.timer) return;
    const wait = Math.max(minDelay, MIN_FLUSH_INTERVAL_MS - (this.now() - this.lastFlushMs), 0);
    this.timer = setTimeout(() => this.flush(), wait);
    this.timer.unref?.();
  }

  private refresh(v: View): void {
    const at = this.now();
    const result = this.live.query(v.query);
    const counts = JSON.stringify(result.counts);
    const order = result.page.map((e) => e.lock.id);
    const next = new Map(result.page.map((e) => [e.lock.id, e]));
    let locks: Lock[];
    let removed: string[] = [];
    let orderChanged = true;
    if (v.needsFull) {
      locks = result.page.map((e) => currentLock(e, at));
    } else {
      locks = [];
      for (const e of result.page) if (v.window.get(e.lock.id) !== e) locks.push(currentLock(e, at));
      removed = [...v.window.keys()].filter((id) => !next.has(id));
      orderChanged = order.length !== v.order.length || order.some((id, i) => v.order[i] !== id);
      const same = locks.length === 0 && removed.length === 0 && !orderChanged;
      if (same && result.total === v.total && counts === v.counts) {
        v.dirty = false;
        return;
      }
    }
    const update: ViewUpdate = {
      viewId: v.viewId,
      seq: v.seq + 1,
      full: v.needsFull,
      generatedAt: new Date(at).toISOString(),
      total: result.total,
      counts: result.counts,
      offset: v.query.offset,
      locks,
      removed,
      ...(orderChanged && !v.needsFull ? { order } : {}),
    };
    if (!v.send(update)) {
      // The browser is behind: keep its last state, and send the whole window once it drains.
      v.needsFull = true;
      v.dirty = true;
      return;
    }
    v.seq = update.seq;
    v.window = next;
    v.order = order;
    v.total = result.total;
    v.counts = counts;
    v.needsFull = false;
    v.dirty = false;
  }
}

/** Whether a change can alter a view: a lock that matches its filter came, changed or went, or its window changed. */
function touches(v: View, change: LiveChange): boolean {
  for (const e of change.upserts) if (v.window.has(e.lock.id) || matches(e, v.query.filter)) return true;
  for (const e of change.removed) if (v.window.has(e.lock.id) || matches(e, v.query.filter)) return true;
  return false;
}
