import { hash } from "node:crypto";
import type { Hazard, Lock, LockEvent, LockEventType } from "../../lib/contract/lock";
import { classifyChange, DEFAULT_TOLERANCE_MS } from "./classify";
import { copyLockWith, none } from "./copy-with";
import { diffHolders, endOf, type TrackedHolding } from "./holders";
import { DeadlineHeap } from "./deadline-heap";
import {
  DEFAULT_HISTORY_OPTIONS,
  historyHazards,
  nextHazardChangeMs,
  RENEWALS_KEPT,
  type HistoryHazardOptions,
  type HoldingHistory,
} from "./history-hazards";

/** A lock as a source observed it, before the tracker adds what needs history (`since`). */
export type ObservedLock = Omit<Lock, "since">;

/**
 * One tracked lock, with its holding's history in the same object (HoldingHistory's fields, every one present):
 * a history object of its own was 100,000 more objects at 100,000 locks.
 */
interface Tracked extends Required<Pick<HoldingHistory, "sinceMs" | "renewals" | "maxTtlMs">> {
  lock: Lock;
  observedAtMs: number;
  tookOverExpired: HoldingHistory["tookOverExpired"];
  reappearedAfterRelease: HoldingHistory["reappearedAfterRelease"];
  /**
   * Digest of the fields that matter to a viewer, to send an upsert only when something really changed. Made when
   * first compared (the lock's next observation), not when the lock is new: a new lock is always upserted, and the
   * digests of the 10,000 locks a full discovery finds were about 40 ms of the agent's CPU after the SCAN pass.
   */
  fingerprint?: string;
  /** Codes of the hazards that come from history (not from the observation), so time can take them off again. */
  historyCodes: ReadonlySet<string>;
  /** When time alone may next change those (nextHazardChangeMs); its entry in the revise heap. Infinity: never. */
  reviseAtMs: number;
}

export interface TrackerOutput {
  events: LockEvent[];
  upserts: Lock[];
  removed: string[];
}

/**
 * Appends `items` to `into` one by one: `push(...items)` passes every item as an argument, and a first poll of a
 * large source (150,000 and more locks) has more than one call takes (a RangeError, "Maximum call stack size
 * exceeded").
 */
export function append<T>(into: T[], items: readonly T[]): void {
  for (const x of items) into.push(x);
}

/** Adds `from`'s events, upserts and removals to `into` (see append). */
export function mergeInto(into: TrackerOutput, from: TrackerOutput): void {
  append(into.events, from.events);
  append(into.upserts, from.upserts);
  append(into.removed, from.removed);
}

export interface TrackerOptions {
  agentId: string;
  newId: () => string;
  toleranceMs?: number;
  history?: HistoryHazardOptions;
}

/**
 * At most this many locks are revised by one reviseHazards call; the rest stay due for the next. Locks first seen
 * together (an agent's start, a key prefix announced at once) pass MAX_HOLD_MS together, and revising them cost
 * about 4 µs a lock (394 ms for 100,000 in the agent's CPU profile, 1 M keys / 100 k locks bench): with the 100,000
 * found in a few polls (no budget), the polls at the limit held the event loop up to 341 ms, and every change waited
 * behind them (bench/agent-steady.ts, 2026-12-07; 60 to 74 ms with this cap). A held-too-long hazard may be raised
 * a few polls late, against a limit of minutes.
 */
export const REVISIONS_PER_CALL = 10_000;

/** The history hazard codes of most locks: one shared empty set instead of one per lock. */
const NO_CODES: ReadonlySet<string> = new Set();

/**
 * History hazards and their code sets, kept once per distinct value: once 100,000 locks passed MAX_HOLD_MS each had
 * its own `held-too-long` hazard (an equal message) and its own Set of one code, 22 MB of a 167 MB heap (heap
 * snapshot, 2026-12-07). Neither is ever changed once made. Bounded: cleared when it holds too many.
 */
const SHARED_MAX = 1000;
const sharedCodes = new Map<string, ReadonlySet<string>>();
const sharedHazards = new Map<string, Hazard>();

function codeSet(hazards: readonly Hazard[]): ReadonlySet<string> {
  if (hazards.length === 0) return NO_CODES;
  const key = hazards.map((h) => h.code).join("\n");
  let set = sharedCodes.get(key);
  if (set === undefined) {
    if (sharedCodes.size >= SHARED_MAX) sharedCodes.clear();
    sharedCodes.set(key, (set = new Set(hazards.map((h) => h.code))));
  }
  return set;
}

function sharedHazard(h: Hazard): Hazard {
  const key = `${h.code}\n${h.severity}\n${h.message}`;
  let shared = sharedHazards.get(key);
  if (shared === undefined) {
    if (sharedHazards.size >= SHARED_MAX) sharedHazards.clear();
    sharedHazards.set(key, (shared = h));
  }
  return shared;
}

/** How many released owners are remembered per source, to spot a token that comes back after its release. */
const RECENT_RELEASES = 10_000;

/** Both holdings are named exactly and the names differ (a missing fingerprint proves nothing either way). */
function differentHolding(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a !== b;
}

/**
 * A source that rebuilds only what changed may mark an observed lock with the object it was spread from: every field
 * of the lock except `hazards`, `observedAt`, `ttlMs` and `since`, an object it hands again, unchanged, as long as
 * those fields are the same (and never changes once handed). The tracker then turns it into JSON once, not on every
 * poll: at 5,000 database locks that JSON was most of the agent's time for an unchanged lock table.
 */
export const STABLE_PART: unique symbol = Symbol("lockscope.stablePart");
export type StablePart = Omit<ObservedLock, "hazards" | "observedAt" | "ttlMs">;

/** SHA-1 of each stable part's JSON, computed once per part. */
const stableDigest = new WeakMap<object, string>();

const sha1 = (text: string) => hash("sha1", text, "base64");

/**
 * A digest of the fields that matter to a viewer (SHA-1 of their JSON): kept per lock, so a digest rather than the
 * JSON itself (a few hundred bytes a lock, kept as the pieces JSON.stringify built it from). A lock with a stable
 * part: that part's digest, made once, and the JSON of what may change without it (since, hazards).
 */
function fingerprint(lock: Lock): string {
  const stable = (lock as Lock & { [STABLE_PART]?: StablePart })[STABLE_PART];
  if (stable !== undefined && lock.holders === undefined) {
    let digest = stableDigest.get(stable);
    if (digest === undefined) {
      const { ttlMs: _t, ...fields } = stable as StablePart & { ttlMs?: unknown };
      stableDigest.set(stable, (digest = sha1(JSON.stringify(fields))));
    }
    return `${digest}${JSON.stringify([lock.since, lock.hazards])}`;
  }
  const { ttlMs: _t, observedAt: _o, holders, ...rest } = lock;
  // Permit leases count down like the lock's own TTL: only who holds (and since when) is a change.
  const json = JSON.stringify(holders ? { ...rest, holders: holders.map((h) => [h.owner, h.since]) } : rest);
  return sha1(json);
}

/**
 * What identifies the holding for change detection: the exact fingerprint when both observations carry one (a
 * ZooKeeper node re-created by the next holder keeps its name but not its czxid and session), else the owner shown.
 */
function holdingOf(
  lock: Pick<Lock, "owner" | "ownerFingerprint">,
  other: Pick<Lock, "ownerFingerprint">,
): string | null {
  if (lock.ownerFingerprint !== undefined && other.ownerFingerprint !== undefined) return lock.ownerFingerprint;
  return lock.owner;
}

/** Holders are reported one by one only when all of them were read (a partial read would invent comings and goings). */
function completeHolders(lock: Pick<Lock, "holders" | "holdersTotal">): boolean {
  return lock.holders !== undefined && lock.holdersTotal === undefined;
}

/**
 * Turns successive observations of one source into events. Pure apart from the id generator: the source decides
 * what is present and what is confirmed gone; absence from a partial or failed scan never counts as a release.
 */
export class LockTracker {
  private readonly tracked = new Map<string, Tracked>();
  private readonly recentReleases = new Map<string, { owner: string | null; atMs: number; type: LockEventType }>();
  private readonly tolerance: number;
  private readonly historyOpts: HistoryHazardOptions;
  /** The history hazard codes withHistory added last; store() keeps them with the lock. */
  private lastHistoryCodes: ReadonlySet<string> = NO_CODES;
  /**
   * (reviseAtMs, lock id) of every tracked lock whose hazards time alone may change, once reviseHazards is in use
   * (a source that re-reads every lock each poll never calls it and keeps no heap).
   */
  private revisions: DeadlineHeap | null = null;
  private changeLog: Map<string, boolean> | null = null;

  constructor(private readonly opts: TrackerOptions) {
    this.tolerance = opts.toleranceMs ?? DEFAULT_TOLERANCE_MS;
    this.historyOpts = opts.history ?? DEFAULT_HISTORY_OPTIONS;
  }

  get size(): number {
    return this.tracked.size;
  }

  /** The ids of the tracked locks (a live view: do not apply while iterating it). */
  ids(): IterableIterator<string> {
    return this.tracked.keys();
  }

  /**
   * The locks added (true) and removed (false) since the previous call, by id, for a caller that keeps something per
   * tracked lock (the replication check's bookkeeping) and updates it by what changed instead of going through all
   * of them; null at the first call and after clear(): start from ids(). Kept only once asked for.
   */
  takeChanges(): ReadonlyMap<string, boolean> | null {
    const log = this.changeLog;
    this.changeLog = new Map();
    return log;
  }

  has(id: string): boolean {
    return this.tracked.has(id);
  }

  locks(): Lock[] {
    return [...this.tracked.values()].map((t) => t.lock);
  }

  /**
   * present: locks seen in this pass (with their observation time); gone: ids confirmed deleted at goneAtMs;
   * `detail` is merged into every event (for example how the change was seen, or that the server restarted).
   */
  apply(
    present: ReadonlyArray<{ lock: ObservedLock; observedAtMs: number }>,
    gone: ReadonlyArray<{ id: string; atMs: number }>,
    detail: Record<string, string | number | boolean> = {},
  ): TrackerOutput {
    const out: TrackerOutput = { events: [], upserts: [], removed: [] };
    for (const { lock: obs, observedAtMs } of present) {
      const prev = this.tracked.get(obs.id);
      // Two paths (poll and notification) read the same keys: an observation older than one already applied, or
      // than the key's confirmed deletion, is stale and must not resurrect or rewind the lock.
      if (prev && observedAtMs < prev.observedAtMs) continue;
      const goneAt = this.recentReleases.get(obs.id)?.atMs;
      if (!prev && goneAt !== undefined && observedAtMs < goneAt) continue;
      if (!prev) {
        const history: HoldingHistory = { sinceMs: observedAtMs, renewals: none(), maxTtlMs: obs.ttlMs };
        const released = this.recentReleases.get(obs.id);
        // The previous holder's lease ran out (it did not release) and someone else took the lock soon after: the
        // "slow holder outlived its TTL" case, seen across two polls instead of within one.
        if (
          obs.holders === undefined &&
          released?.type === "expired" &&
          released.owner !== obs.owner &&
          observedAtMs - released.atMs <= this.historyOpts.rememberMs
        ) {
          history.tookOverExpired = { previousOwner: released.owner, atMs: observedAtMs };
        }
        // Only random tokens count: Redisson's `<uuid>:<threadId>` or a literal "1" legitimately come back.
        if (released && obs.kind === "string" && (obs.owner?.length ?? 0) >= 16 && released.owner === obs.owner) {
          history.reappearedAfterRelease = { atMs: observedAtMs };
        }
        const first = obs.holders ? diffHolders(null, observedAtMs, obs.holders, observedAtMs) : null;
        const lock = this.withHistory(
          copyLockWith(obs, { since: obs.observedAt }, first ? { holders: first.holders } : undefined),
          history,
          observedAtMs,
        );
        this.store(lock, observedAtMs, history, out);
        if (first && completeHolders(obs) && first.acquired.length > 0) {
          for (const h of first.acquired) out.events.push(this.holderEvent("acquired", lock, h, observedAtMs, detail));
        } else out.events.push(this.event("acquired", lock, observedAtMs, detail));
        continue;
      }
      // Two holdings can share the display owner (a value cut at 128 characters); the fingerprint tells them apart.
      const otherHolding =
        prev.lock.owner === obs.owner && differentHolding(prev.lock.ownerFingerprint, obs.ownerFingerprint);
      // With several holders by design, the first one changing is a permit coming or going, not a new owner.
      const multi = obs.holders !== undefined;
      const c = classifyChange(
        { owner: multi ? null : holdingOf(prev.lock, obs), ttlMs: prev.lock.ttlMs, observedAtMs: prev.observedAtMs },
        { owner: multi ? null : holdingOf(obs, prev.lock), ttlMs: obs.ttlMs, observedAtMs },
        observedAtMs,
        this.tolerance,
      );
      const permits = multi
        ? diffHolders(
            (prev.lock.holders as TrackedHolding[] | undefined) ?? [],
            prev.observedAtMs,
            obs.holders!,
            observedAtMs,
            this.tolerance,
          )
        : null;
      const ownerChanged = c?.type === "owner-changed";
      const history: HoldingHistory = ownerChanged
        ? {
            sinceMs: observedAtMs,
            renewals: none(),
            maxTtlMs: obs.ttlMs,
            ...(c.afterExpiry ? { tookOverExpired: { previousOwner: prev.lock.owner, atMs: observedAtMs } } : {}),
          }
        : {
            sinceMs: prev.sinceMs,
            renewals: c?.type === "renewed" ? [...prev.renewals, observedAtMs].slice(-RENEWALS_KEPT) : prev.renewals,
            maxTtlMs: obs.ttlMs === null || prev.maxTtlMs === null ? obs.ttlMs : Math.max(obs.ttlMs, prev.maxTtlMs),
            tookOverExpired: prev.tookOverExpired,
            reappearedAfterRelease: prev.reappearedAfterRelease,
          };
      const lock = this.withHistory(
        copyLockWith(
          obs,
          { since: ownerChanged ? obs.observedAt : prev.lock.since },
          permits ? { holders: permits.holders } : undefined,
        ),
        history,
        observedAtMs,
      );
      const changed = this.store(lock, observedAtMs, history, out, prev.fingerprint ?? fingerprint(prev.lock));
      if (permits && completeHolders(obs) && completeHolders(prev.lock)) {
        // Every acquire or refresh re-sets the key's TTL, so the key's own renewal says nothing: report per permit.
        for (const e of permits.ended) out.events.push(this.holderEvent(e.type, lock, e.holding, observedAtMs, detail));
        for (const h of permits.acquired) out.events.push(this.holderEvent("acquired", lock, h, observedAtMs, detail));
        for (const h of permits.renewed) out.events.push(this.holderEvent("renewed", lock, h, observedAtMs, detail));
        if (permits.renewed.length > 0 && !changed) out.upserts.push(lock);
        continue;
      }
      if (c) {
        const extra: Record<string, string | number | boolean> = { ...detail };
        if (ownerChanged) {
          extra.afterExpiry = c.afterExpiry ?? false;
          extra.heldMs = observedAtMs - Date.parse(prev.lock.since);
          if (otherHolding) extra.sameOwnerText = true;
        }
        out.events.push(this.event(c.type, lock, observedAtMs, extra, prev.lock.owner));
        if (!changed) out.upserts.push(lock); // a renewal changes only the TTL, which the fingerprint ignores
      }
    }
    for (const { id, atMs } of gone) {
      const prev = this.tracked.get(id);
      if (!prev || atMs < prev.observedAtMs) continue;
      const c = classifyChange(
        { owner: prev.lock.owner, ttlMs: prev.lock.ttlMs, observedAtMs: prev.observedAtMs },
        null,
        atMs,
        this.tolerance,
      );
      this.tracked.delete(id);
      this.changeLog?.set(id, false);
      const type: LockEventType = detail.reason === "server-restarted" ? "lost" : (c?.type ?? "released");
      this.rememberRelease(id, prev.lock.owner, atMs, type);
      out.removed.push(id);
      const holders = (prev.lock.holders as TrackedHolding[] | undefined) ?? [];
      if (completeHolders(prev.lock) && holders.length > 0) {
        // The key went with its permits: each one ended, by its own lease.
        for (const h of holders) {
          const end = endOf(h, prev.observedAtMs, atMs, this.tolerance);
          const t = detail.reason === "server-restarted" ? "lost" : end.type;
          out.events.push(this.holderEvent(t, { ...prev.lock, ttlMs: null }, { ...h, ttlMs: null }, atMs, detail));
        }
        continue;
      }
      out.events.push(
        this.event(type, { ...prev.lock, ttlMs: null }, atMs, {
          ...detail,
          heldMs: atMs - Date.parse(prev.lock.since),
        }),
      );
    }
    return out;
  }

  /** Stops tracking these ids without events: they turned out to be part of another lock (companion keys). */
  drop(ids: readonly string[]): void {
    for (const id of ids) if (this.tracked.delete(id)) this.changeLog?.set(id, false);
  }

  /** Drops everything without events (the source itself was removed from the configuration). */
  clear(): string[] {
    const ids = [...this.tracked.keys()];
    this.tracked.clear();
    this.changeLog = null;
    return ids;
  }

  /** The observed lock with the hazards its history adds (deduplicated by code, the source's own first). */
  private withHistory(lock: Lock, history: HoldingHistory, nowMs: number): Lock {
    const extra = historyHazards(history, lock.ttlMs, nowMs, this.historyOpts)
      .filter((h) => !lock.hazards.some((x) => x.code === h.code))
      .map(sharedHazard);
    this.lastHistoryCodes = codeSet(extra);
    // concat, not a spread: a spread's array keeps room for 17 entries (15 MB at 100,000 locks).
    return extra.length > 0 ? copyLockWith(lock, { hazards: lock.hazards.concat(extra) }) : lock;
  }

  /**
   * Hazards that only time changes (a takeover or a zombie remembered for HAZARD_MEMORY_MS, renewals that stopped,
   * a hold that became too long), re-evaluated without a new read: a source that re-reads only what changed
   * (client tracking) would otherwise keep a remembered hazard on a quiet lock for ever. Upserts the locks whose
   * hazard codes changed; wording that only counts time up is left for the next read.
   *
   * Only the locks whose moment has come (nextHazardChangeMs) are looked at: visiting all 100,000 tracked locks at
   * every poll was what a quiet agent spent most of its time on, and once they are all held past MAX_HOLD_MS each
   * visit allocated. At most REVISIONS_PER_CALL of them a call.
   */
  reviseHazards(nowMs: number): TrackerOutput {
    const out: TrackerOutput = { events: [], upserts: [], removed: [] };
    if (this.revisions === null) {
      // The first call looks at every lock once: what time changed before the heap was kept is due now.
      const heap = (this.revisions = new DeadlineHeap());
      for (const t of this.tracked.values()) heap.push((t.reviseAtMs = nowMs), t.lock.id);
    }
    for (const { atMs, key: id } of this.revisions.popDue(nowMs, REVISIONS_PER_CALL)) {
      const t = this.tracked.get(id);
      if (!t || t.reviseAtMs !== atMs) continue; // re-read since, or gone: a stale entry
      const found = historyHazards(t, t.lock.ttlMs, nowMs, this.historyOpts);
      const base = t.lock.hazards.filter((h) => !t.historyCodes.has(h.code));
      const extra = found.filter((h) => !base.some((x) => x.code === h.code)).map(sharedHazard);
      const codes = codeSet(extra);
      let current = t;
      if (codes.size !== t.historyCodes.size || ![...codes].every((c) => t.historyCodes.has(c))) {
        const hazards = base.concat(extra);
        const lock = copyLockWith(t.lock, { hazards: hazards.length > 0 ? hazards : none<Hazard>() });
        // The digest waits for the lock's next comparison (Tracked.fingerprint), as a new lock's does.
        current = { ...t, lock, fingerprint: undefined, historyCodes: codes };
        this.tracked.set(lock.id, current);
        out.upserts.push(lock);
      }
      current.reviseAtMs = Infinity;
      this.scheduleRevision(current, nowMs);
    }
    return out;
  }

  /** Puts the lock in the revise heap at its next moment, when that moment moved (and the heap is in use). */
  private scheduleRevision(t: Tracked, nowMs: number): void {
    const heap = this.revisions;
    if (heap === null) return;
    const at = nextHazardChangeMs(t, nowMs, this.historyOpts);
    if (at === t.reviseAtMs) return;
    t.reviseAtMs = at;
    if (at === Infinity) return;
    heap.push(at, t.lock.id);
    // Stale entries (locks re-read with a new moment, or gone) are dropped once they outnumber the live ones.
    if (heap.size > 2 * this.tracked.size + 1000) {
      heap.compact((a, id) => this.tracked.get(id)?.reviseAtMs === a);
    }
  }

  private rememberRelease(id: string, owner: string | null, atMs: number, type: LockEventType): void {
    this.recentReleases.delete(id);
    this.recentReleases.set(id, { owner, atMs, type });
    if (this.recentReleases.size > RECENT_RELEASES) {
      this.recentReleases.delete(this.recentReleases.keys().next().value!);
    }
  }

  private store(
    lock: Lock,
    observedAtMs: number,
    history: HoldingHistory,
    out: TrackerOutput,
    previousFingerprint?: string,
  ): boolean {
    const historyCodes = this.lastHistoryCodes;
    const before = this.tracked.get(lock.id);
    if (before === undefined) this.changeLog?.set(lock.id, true);
    const reviseAtMs = before?.reviseAtMs ?? Infinity;
    // A new lock is always upserted: its fingerprint waits for its first comparison (see Tracked.fingerprint).
    const fp = previousFingerprint === undefined ? undefined : fingerprint(lock);
    const t: Tracked = {
      lock,
      observedAtMs,
      sinceMs: history.sinceMs,
      renewals: history.renewals,
      maxTtlMs: history.maxTtlMs,
      tookOverExpired: history.tookOverExpired,
      reappearedAfterRelease: history.reappearedAfterRelease,
      fingerprint: fp,
      historyCodes,
      reviseAtMs,
    };
    this.tracked.set(lock.id, t);
    this.scheduleRevision(t, observedAtMs);
    if (fp !== undefined && fp === previousFingerprint) return false;
    out.upserts.push(lock);
    return true;
  }

  /** One permit's event: the permit holder is the event's owner, and the lock's other permits are untouched. */
  private holderEvent(
    type: LockEventType,
    lock: Lock,
    h: TrackedHolding,
    atMs: number,
    detail: Record<string, string | number | boolean>,
  ): LockEvent {
    const extra: Record<string, string | number | boolean> = { ...detail, permit: true };
    if (type !== "acquired" && type !== "renewed") extra.heldMs = atMs - Date.parse(h.since);
    return this.event(type, { ...lock, owner: h.owner, ttlMs: h.ttlMs ?? null }, atMs, extra);
  }

  private event(
    type: LockEventType,
    lock: Lock,
    atMs: number,
    detail: Record<string, string | number | boolean>,
    previousOwner?: string | null,
  ): LockEvent {
    const ev: LockEvent = {
      id: this.opts.newId(),
      agentId: this.opts.agentId,
      type,
      lockId: lock.id,
      backend: lock.backend,
      source: lock.source,
      resource: lock.resource,
      owner: lock.owner,
      library: lock.library,
      ttlMs: lock.ttlMs,
      at: new Date(atMs).toISOString(),
    };
    if (previousOwner !== undefined) ev.previousOwner = previousOwner;
    if (Object.keys(detail).length > 0) ev.detail = detail;
    return ev;
  }
}
