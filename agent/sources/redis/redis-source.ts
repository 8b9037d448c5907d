import type { Hazard, SourceStatus } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import { none } from "../../core/copy-with";
import { cutPrefix, escapeBytes } from "../../core/escape";
import { staticHazards } from "../../core/hazards";
import { DEFAULT_HISTORY_OPTIONS } from "../../core/history-hazards";
import { lockId } from "../../core/lock-id";
import { BatchReader } from "../../core/batch-reader";
import { compileBytePrefilter, compilePatterns, supersetGlob } from "../../core/glob";
import { append, LockTracker, type ObservedLock, type TrackerOutput } from "../../core/tracker";
import { previewSample } from "./preview";
import { fingerprintHex } from "../../release/fingerprint";
import { NO_OUTPUT, runRelease, type ReleaseAdapter, type ReleaseRun } from "../../release/release-runner";
import {
  MAX_RELEASE_VALUE_BYTES,
  needsServerFingerprint,
  planRelease,
  sampleFingerprint,
  type ReleasePlan,
  type RedisReleasePort,
} from "./redis-release";
import {
  companionKeysFor,
  companionOwner,
  parsePubsubNumsub,
  pubsubChannelFor,
  recognise,
  withSubscriberHint,
  type Recognition,
} from "./recognisers";
import { LOCK_QUEUE, LOCK_TIMEOUT, prefixName } from "./recognisers/redisson-names";
import { RULE_PERMIT_EXPIRABLE, RULE_SEMAPHORE_BY_WAITERS } from "./recognisers/redisson-semaphore";
import type { KeySample, RedisLockPort } from "./redis-port";
import { DeadlineHeap } from "../../core/deadline-heap";
import { CommandCosts, ServerTimeBudget, type CommandKind } from "./server-time-budget";
import { PAGE } from "./redis-client";
import { contentDigest, unchangedSince } from "./sweep-check";

export interface RedisSourceOptions {
  sourceId: string;
  agentId: string;
  lockPatterns: readonly string[];
  scanCount: number;
  /**
   * While the server-time budget paces the pass: the server time one SCAN step aims at, its COUNT sized from the
   * server's account of the last steps (at most scanCount). 0 or absent: every step asks for scanCount.
   */
  scanStepUsec?: number;
  /** Key visits allowed per poll (SCAN COUNT n costs n, a sampled key costs 4 commands); 0 = unlimited. */
  visitBudgetPerPoll: number;
  valuePreviewBytes: number;
  newId: () => string;
  now?: () => number;
  /** Hold limit for history hazards (see history-hazards.ts); default 15 minutes. */
  maxHoldMs?: number;
  /** How long takeover and zombie hazards stay on a lock; default 5 minutes. */
  hazardMemoryMs?: number;
  /**
   * What lock ids are derived from instead of sourceId. A Redis Cluster uses one scope for all its masters, so a
   * lock keeps its id when a failover or resharding moves its key to another node. Default: sourceId.
   */
  lockIdScope?: string;
  /** Adds hazards that need other nodes (a lock not yet on a replica); asked once per successful poll. */
  annotator?: LockAnnotator;
  /** Track mode: each known lock is re-read about this often even when the server announced nothing; default 60 s. */
  sweepMs?: number;
  /**
   * The watched server's time lockscope may use (SCAN steps, the sweep; in poll mode the re-reads too); shared by
   * every reader of the node. Default: unlimited.
   */
  budget?: ServerTimeBudget;
  /** Instead of `budget`: this source's own budget, as a share of one core (0.01 = 1%); 0 = unlimited. */
  serverTimeBudgetFraction?: number;
  /**
   * Where changes seen between polls go (a lock re-read at its lease end). With it the source runs one timer for
   * the earliest lease end; without it (unit tests) `refreshDue` is called by hand.
   */
  push?: (output: TrackerOutput) => void;
}

/**
 * A hook for what the node itself cannot tell: extra hazards by lock id for the locks present this poll. Must not
 * throw; if it does, the poll goes on without its hazards.
 */
export interface LockAnnotator {
  /**
   * `changes`, when given, is how `locks` differs from the previous call's (ids added and removed): bookkeeping per
   * lock can follow it instead of going through every lock (in track mode every tracked lock is handed each poll).
   */
  annotate(
    locks: readonly AnnotatedLock[],
    changes?: AnnotatedChanges,
  ): Promise<ReadonlyMap<string, readonly Hazard[]>>;
}

/** A lock handed to the annotator: its id and its key's bytes as a latin1 string (KnownKey.name). */
export interface AnnotatedLock {
  readonly id: string;
  readonly name: string;
}

export interface AnnotatedChanges {
  added: readonly string[];
  removed: readonly string[];
}

/** Keys sampled per pipeline: keeps each reply small and lets other clients' commands interleave. */
const SAMPLE_BATCH = 250;
/** The safety sweep's part of the server-time budget: the rest stays for the SCAN that finds new keys. */
export const SWEEP_BUDGET_SHARE = 0.5;
/** Most keys one poll's sweep slice takes (2,000 a second is 120,000 a minute at 1 s polls). */
const MAX_SWEEP_SLICE = 2000;
/**
 * With an unlimited budget, batches of new keys are read (and recognised) while the SCAN pass goes on, at most this
 * many at once on the connection (each batch is one pipeline): the reads ride in the gaps of the SCAN round trips.
 * Smaller batches, more at once, cost more than they gain: in a scratch run at load 4 (9 rounds, 2026-12-06), 250
 * keys 2 at once took 1.51× the raw loop, 50 keys 4 at once 1.87×, 1,000 keys 2 at once 1.58×.
 */
const READS_IN_FLIGHT = 2;
/**
 * The two walks of a split SCAN pass (with no budget, on a server whose cursor allows it: halvesScan). SCAN's
 * cursor visits the hash table's buckets in reversed-bit order, and the reversed cursor only grows, across a resize
 * or a rehash too: that is how one pass returns every key present throughout. So the pass splits into two walks of
 * that order, each with the same guarantee for its half: from cursor 0 until a cursor is odd (reversed, at least
 * half), and from cursor 1 (reversed, exactly half) to the end. A key may come twice, as in any pass. With a
 * step of each walk in flight the server always has the next step queued while the agent matches and reads what
 * the last one found: 1.17× instead of 1.30× the raw SCAN COUNT 1000 loop (BENCHMARKS.md, "Two halves of the
 * table at once"), and another client's command may wait behind two steps instead of one.
 * (Where the cursor's low bits name a slot first, as in Redis 7.4's cluster mode, the first walk is slot 0 and the
 * second the rest: still every key, without the gain.)
 */
function scanHalves(): Array<{ cursor: string; ends: (cursor: string) => boolean }> {
  const odd = (c: string) => "13579".includes(c[c.length - 1]!);
  return [
    { cursor: "0", ends: (c) => c === "0" || odd(c) },
    { cursor: "1", ends: (c) => c === "0" },
  ];
}

/** Channels per PUBSUB NUMSUB call. */
const NUMSUB_BATCH = 500;
/** Rules for locks that have no TTL by design (Redisson semaphores hold a permit count, not a lease). */
const NO_TTL_BY_DESIGN = new Set([RULE_PERMIT_EXPIRABLE, RULE_SEMAPHORE_BY_WAITERS]);

interface KnownKey {
  /**
   * The key's bytes as a latin1 string (one character a byte, so any key round-trips): the key of `known`, the
   * dirty set and the deadline heap, one string shared by all of them. A Buffer a lock cost 100 bytes more and a
   * share of an 8 KB pool slab (keyBytes makes one for each command instead).
   */
  name: string;
  type: string;
  /** The lock id, hashed once when the key is first sampled rather than on every poll. */
  id?: string;
  /** When the key was last read (the sweep skips keys read recently). */
  readAtMs?: number;
  /** When its lease ends by the last read (the deadline heap's entry for it); undefined without a TTL. */
  deadlineMs?: number;
  /**
   * Track mode: when a hazard that only time reveals would show (renewals stopped, held too long), so the lock is
   * re-read then although nothing changed; also a heap entry.
   */
  checkAtMs?: number;
  /** When its last renewal was seen (the renewal period, for the check above). */
  renewedAtMs?: number;
  /**
   * Digest of the last full read when that read saw the whole value and none of the lock's companion keys existed:
   * the sweep then re-reads it with PTTL and the bounded read only (sweep-check.ts). Undefined: the sweep reads it
   * fully.
   */
  digest?: string;
  /**
   * The lock has companion keys (companionKeysFor) and none of them existed at the last full read: the sweep's
   * cheap re-read adds one EXISTS of them, which must count 0.
   */
  companions?: true;
  /** Redisson waiters: the lock's unlock channel and its subscriber count at the last full read. */
  channel?: string;
  subscribers?: number;
}

/** A known key once it has been read: its lock id is set (keysById holds only these). */
type IdentifiedKey = KnownKey & { id: string };

/**
 * A KnownKey with every field present from the start, so all of them share one object shape with the fields inside
 * the object. Built as `{ key, type }` and filled in later, each of the 100,000 known keys of a large server also
 * carried a separate property array (8.4 MB of a 175 MB heap in a heap snapshot, 2026-12-06).
 */
function knownKey(name: string, type: string, id?: string): KnownKey {
  return {
    name,
    type,
    id,
    readAtMs: undefined,
    deadlineMs: undefined,
    checkAtMs: undefined,
    renewedAtMs: undefined,
    digest: undefined,
    companions: undefined,
    channel: undefined,
    subscribers: undefined,
  };
}

/** A key's bytes from its latin1 name (KnownKey.name). */
const keyBytes = (name: string): Buffer => Buffer.from(name, "latin1");

/**
 * One batch of keys read together: the samples, when they were read, the write sequence just before, and per
 * sample what follows from it alone (its lock id, name, content digest and companion key names), worked out as
 * the batch arrives (during the SCAN pass, for new keys) rather than after the pass.
 */
interface BatchRead {
  batch: KnownKey[];
  samples: KeySample[];
  at: number;
  seq: number;
  facts: Array<{ id: string; text: string; digest: string | undefined; companions: string[] }>;
  /**
   * During an unlimited pass (prepareBatch), per sample of a present key that is not a companion: its lock built,
   * and its unlock channel with the subscribers counted; the tracker takes them after the pass.
   */
  prepared?: Array<PreparedLock | undefined>;
}

/** A new key's lock, recognised and built while the SCAN pass goes on (see prepareBatch). */
interface PreparedLock {
  lock: ObservedLock;
  channel: string | null;
  subscribers: number;
}

export type ChangeDetection = "track" | "poll";

/** Key names longer than this are re-read only when announced or at lease end (and in poll mode by the sweep). */
export const LONG_KEY_NAME_BYTES = 4096;

/**
 * Watches one Redis node. Each poll re-reads every known lock key (pipelined) and advances a paced SCAN pass that
 * finds new ones. A lock counts as gone only when a direct read says so (PTTL -2): a failed or partial poll
 * changes nothing, so an outage or a restart of the agent never shows up as a burst of false releases.
 */
export class RedisSource {
  readonly tracker: LockTracker;
  private readonly known = new Map<string, KnownKey>();
  /** lockId -> its known key, for acting on a lock the dashboard names by id. */
  private readonly keysById = new Map<string, IdentifiedKey>();
  private readonly matches: (key: string) => boolean;
  /** A necessary condition for `matches` on the raw bytes: a scanned key failing it never becomes a string. */
  private readonly mayMatch: (key: Uint8Array) => boolean;
  /**
   * SCAN's MATCH: one glob every lock pattern implies (supersetGlob), so the server sends only the keys that may be
   * locks, not every key it visits; undefined when the patterns imply none.
   */
  private readonly scanMatch: Buffer | undefined;
  private readonly now: () => number;
  private cursor = "0";
  private passStartedMs = 0;
  private runId: string | null = null;
  private up = false;
  private error: string | undefined = "not connected yet";
  private lastScanAt: string | undefined;
  private lastScanMs: number | undefined;
  /** The COUNT of the last SCAN step (sized to REDIS_SCAN_STEP_US while the budget paces the pass). */
  private lastStepCount: number | undefined;
  private sourceId: string;
  private readonly idScope: string;
  private annotator: LockAnnotator | undefined;
  /** The annotator's last answer, applied to notification refreshes too so its hazards do not flicker. */
  private annotations: ReadonlyMap<string, readonly Hazard[]> = new Map();
  /** Set by retarget after a failover: the next poll reports keys the new node lacks as lost. */
  private failoverFrom: string | null = null;
  /**
   * Keys this agent force-released, with the write's sequence number. A poll or notification refresh that read a key
   * before the release finishes after it: its sample still shows the lock, and applying it would show the lock held
   * again (a phantom re-acquisition) until the next poll. Samples read before the release are discarded for it.
   */
  private readonly releasedAt = new Map<string, number>();
  private writeSeq = 0;
  private refreshesRunning = 0;
  /**
   * Keys whose force-release is writing right now. A sample of such a key is not applied: the release reports its
   * own deletion, with who and why, and the refresh that the delete's invalidation starts could otherwise win the
   * race and report it first as a plain release. Such a key is read again at the next poll.
   */
  private readonly releasing = new Set<string>();
  /**
   * How changes are detected right now: "track" only while the server announces changes of the keys read (the
   * tracking and redirect connections are both up and set); otherwise every known key is re-read each poll.
   */
  private detection: ChangeDetection = "poll";
  private detectionNote: string | undefined;
  /** Every known key must be re-read once (tracking just (re-)enabled, a FLUSHALL, a lost invalidation). */
  private resyncPending = false;
  /** Keys (KnownKey.name) announced but not re-read yet (the read failed): the next poll reads them. */
  private readonly dirty = new Set<string>();
  private readonly deadlines = new DeadlineHeap();
  private deadlineTimer: NodeJS.Timeout | null = null;
  private deadlineTimerAt = Infinity;
  private dueRunning = false;
  private closed = false;
  private sweepIter: Iterator<KnownKey> | null = null;
  private lastSweepMs: number | null = null;
  /** When the sweep's current round over every known key began, and how long the last whole round took. */
  private sweepRoundStartedMs: number | null = null;
  private lastSweepRoundMs: number | undefined;
  private readonly budget: ServerTimeBudget;
  /**
   * The sweep's part of the budget (SWEEP_BUDGET_SHARE of it): at 100,000 quiet locks re-reading each once a minute
   * would cost the whole budget and stop the SCAN, so new keys would never be found; the sweep then takes longer
   * than REDIS_SWEEP_MS instead (`lastSweepMs` in the status says how long).
   */
  private readonly sweepBudget: ServerTimeBudget;
  private readonly costs = new CommandCosts();
  private costsReadAtMs = Number.NEGATIVE_INFINITY;
  private readonly sweepMs: number;
  /** What the annotator was handed last in track mode (handOver); null: hand everything anew. */
  private handed: {
    byId: Map<string, AnnotatedLock>;
    list: AnnotatedLock[] | null;
    /** Ids on the list because this poll read them new, before the tracker had them. */
    fresh: Set<string>;
  } | null = null;

  constructor(
    private port: RedisLockPort,
    private readonly opts: RedisSourceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.sourceId = opts.sourceId;
    this.idScope = opts.lockIdScope ?? opts.sourceId;
    this.annotator = opts.annotator;
    this.budget = opts.budget ?? new ServerTimeBudget(opts.serverTimeBudgetFraction ?? 0);
    this.sweepBudget = this.budget.portion(SWEEP_BUDGET_SHARE);
    this.sweepMs = opts.sweepMs ?? 60_000;
    this.tracker = new LockTracker({
      agentId: opts.agentId,
      newId: opts.newId,
      history: {
        maxHoldMs: opts.maxHoldMs ?? DEFAULT_HISTORY_OPTIONS.maxHoldMs,
        rememberMs: opts.hazardMemoryMs ?? DEFAULT_HISTORY_OPTIONS.rememberMs,
      },
    });
    // SCAN returns raw bytes; patterns are matched against the key's bytes read as latin1, one char per byte.
    const latin1 = opts.lockPatterns.map((p) => Buffer.from(p, "utf8").toString("latin1"));
    this.matches = compilePatterns(latin1);
    this.mayMatch = compileBytePrefilter(latin1);
    const superset = supersetGlob(latin1);
    this.scanMatch = superset === null ? undefined : Buffer.from(superset, "latin1");
  }

  status(): SourceStatus {
    const s: SourceStatus = {
      id: this.sourceId,
      kind: "redis",
      up: this.up,
      locks: this.tracker.size,
      agentId: this.opts.agentId,
    };
    if (!this.up && this.error) s.error = this.error;
    if (this.lastScanAt) s.lastScanAt = this.lastScanAt;
    if (this.lastScanMs !== undefined) s.lastScanMs = this.lastScanMs;
    if (this.lastStepCount !== undefined) s.scanStepCount = this.lastStepCount;
    if (this.lastSweepRoundMs !== undefined) s.lastSweepMs = this.lastSweepRoundMs;
    s.changeDetection = this.detection;
    if (this.detectionNote) s.note = this.detectionNote;
    return s;
  }

  /**
   * Tracking was (re-)enabled, or was refused or lost: in "track" mode only announced, due and swept keys are
   * re-read; switching to it re-reads every known key once (what changed while nothing was tracked is unknown).
   */
  setChangeDetection(mode: ChangeDetection, note?: string): void {
    if (mode === "track") this.resyncPending = true;
    this.detection = mode;
    this.detectionNote = note;
  }

  /** The server said "everything changed" (FLUSHALL, FLUSHDB: an invalidation without key names). */
  resync(): void {
    this.resyncPending = true;
  }

  /** Stops the lease-end timer (the source is being removed). */
  close(): void {
    this.closed = true;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
  }

  /** Connection state from the client; a poll that fails also marks the source down. */
  setConnection(up: boolean, error?: string): void {
    this.up = up;
    this.error = up ? undefined : (error ?? "down");
  }

  /**
   * The node behind this source changed: a cluster failover promoted a replica, or the node came back at another
   * address. Lock ids stay (lockIdScope). After a failover the next poll re-reads every known key on the new node
   * and reports the ones it lacks as lost (reason server-restarted, with failoverFrom): they were not replicated.
   */
  retarget(to: { sourceId: string; port: RedisLockPort; annotator?: LockAnnotator; failover: boolean }): void {
    if (to.failover) {
      this.failoverFrom ??= this.sourceId;
      this.runId = null;
    }
    this.sourceId = to.sourceId;
    this.port = to.port;
    this.annotator = to.annotator;
    this.annotations = new Map();
    this.handed = null; // a new annotator knows nothing yet
    this.cursor = "0";
    this.resyncPending = true;
  }

  /** One poll. Throws nothing: a failure marks the source down and leaves the tracked state as it was. */
  async poll(): Promise<TrackerOutput> {
    const empty: TrackerOutput = { events: [], upserts: [], removed: [] };
    let full = false;
    let dirty: KnownKey[] = [];
    let swept: KnownKey[] = [];
    let sweptChargeMs = 0;
    try {
      const restarted = await this.checkRunId();
      await this.readCommandCosts();
      const failoverFrom = this.failoverFrom;
      full = this.detection === "poll" || this.resyncPending || restarted || failoverFrom !== null;
      this.resyncPending = false;
      // Chosen before the SCAN steps: known locks come first in the budget (the sweep keeps their truth), new
      // keys get what is left.
      let targets: KnownKey[];
      if (full) {
        // Poll mode within the budget: while lockscope's recent reads cost more of the server than allowed, a
        // poll skips the re-read and waits; a resync, a restart or a failover is read at once.
        const forced = restarted || failoverFrom !== null || this.detection === "track";
        targets = forced || this.budget.allows() ? this.pollTargets() : [];
        // Announced keys not known yet (a new lock whose first read failed) are not among the known ones.
        for (const name of this.dirty) if (!this.known.has(name)) targets.push(knownKey(name, ""));
        this.dirty.clear();
      } else {
        dirty = [...this.dirty].map((name) => this.known.get(name) ?? knownKey(name, ""));
        this.dirty.clear();
        const spent0 = this.budget.spentMs;
        swept = await this.sweepCheck(this.sweepSlice());
        sweptChargeMs = this.budget.spentMs - spent0;
        targets = [...dirty, ...swept];
      }
      let out: TrackerOutput;
      if (this.budget.unlimited) {
        // Nothing to pace (and no share of the reads for the sweep to pay): new keys are read during the pass.
        out = await this.refresh(targets, restarted, "poll", failoverFrom, true);
      } else {
        const discovered = await this.discover(null, new Set());
        const reads = uniqueKeys([...targets, ...discovered]);
        const spent1 = this.budget.spentMs;
        out = await this.refresh(reads, restarted, "poll", failoverFrom);
        // The sweep's part of the budget pays for its checks and its share of the full reads.
        if (!full && reads.length > 0) sweptChargeMs += ((this.budget.spentMs - spent1) * swept.length) / reads.length;
      }
      this.sweepBudget.spend(sweptChargeMs);
      // Quiet locks are not re-read in track mode: what only time changes (a remembered takeover) is revised here.
      if (!full) append(out.upserts, this.tracker.reviseHazards(this.now()).upserts);
      this.failoverFrom = null;
      this.up = true;
      this.error = undefined;
      return out;
    } catch (err) {
      // What this poll meant to read must still be read: a resync stays pending, announced keys stay dirty.
      if (full && this.detection === "track") this.resyncPending = true;
      for (const d of dirty) this.dirty.add(d.name);
      this.up = false;
      this.error = err instanceof Error ? err.message : String(err);
      return empty;
    }
  }

  /**
   * Every known key, except that a key name over LONG_KEY_NAME_BYTES is re-sent only at the sweep's pace: a
   * hostile 1 MB name re-sent on every poll cost the server gigabytes of traffic.
   */
  private pollTargets(): KnownKey[] {
    const now = this.now();
    const out: KnownKey[] = [];
    for (const k of this.known.values()) {
      if (k.name.length > LONG_KEY_NAME_BYTES && k.readAtMs !== undefined && now - k.readAtMs < this.sweepMs) continue;
      out.push(k);
    }
    return out;
  }

  /**
   * The safety sweep: each poll takes the next share of known keys, so that each is re-read about once per
   * sweepMs even if an invalidation was lost; keys read recently for another reason are skipped, long names too
   * (they are re-read when announced or at lease end). Optional work: it waits while the budget is spent.
   */
  private sweepSlice(): KnownKey[] {
    const now = this.now();
    const last = this.lastSweepMs ?? now;
    if (!this.budget.allows() || !this.sweepBudget.allows()) return [];
    this.lastSweepMs = now;
    // A slice is at most MAX_SWEEP_SLICE keys: after a wait for the budget the round goes on, it does not catch up.
    const share = Math.min(MAX_SWEEP_SLICE, Math.ceil((this.known.size * Math.max(0, now - last)) / this.sweepMs));
    this.sweepRoundStartedMs ??= now;
    const out: KnownKey[] = [];
    let visited = 0;
    let restarted = false;
    while (visited < share && this.known.size > 0) {
      this.sweepIter ??= this.known.values();
      const next = this.sweepIter.next();
      if (next.done) {
        this.sweepIter = null;
        this.lastSweepRoundMs = now - (this.sweepRoundStartedMs ?? now);
        this.sweepRoundStartedMs = now;
        if (restarted) break;
        restarted = true;
        continue;
      }
      visited++;
      const k = next.value;
      if (k.name.length > LONG_KEY_NAME_BYTES) continue;
      if (k.readAtMs !== undefined && now - k.readAtMs < this.sweepMs / 2) continue;
      out.push(k);
    }
    return out;
  }

  /**
   * The sweep's keys that may have changed: each key whose last full read saw its whole value is re-read with
   * PTTL and the bounded read only (2 commands instead of 4) and kept out of the full read when it shows exactly
   * what was known; a lock with companion keys also when one EXISTS of them still counts none (instead of a TYPE
   * and PTTL of each); Redisson locks also when their waiters (PUBSUB NUMSUB, which no invalidation announces) are
   * as many as before. Everything else is returned for the full read.
   */
  private async sweepCheck(keys: KnownKey[]): Promise<KnownKey[]> {
    const port = this.port;
    if (!port.resample || keys.length === 0) return keys;
    const changed: KnownKey[] = [];
    const cheap: KnownKey[] = [];
    for (const k of keys) {
      const eligible = k.digest !== undefined && k.type !== "" && (!k.companions || port.countExisting);
      (eligible ? cheap : changed).push(k);
    }
    const resampled: Array<{ k: KnownKey; s: KeySample }> = [];
    const preview = this.opts.valuePreviewBytes;
    for (let i = 0; i < cheap.length; i += SAMPLE_BATCH) {
      const batch = cheap.slice(i, i + SAMPLE_BATCH);
      // Half a full read's commands (PTTL and the bounded read; no TYPE, no length), charged like every metered
      // batch: at the server's own account when known, else at the reply time, corrected once it is read.
      const samples = await this.metered("read", batch.length / 2, () =>
        port.resample!(
          batch.map((b) => keyBytes(b.name)),
          batch.map((b) => b.type),
          preview,
        ),
      );
      const at = this.now();
      samples.forEach((s, j) => {
        const k = batch[j]!;
        const known = { digest: k.digest!, deadlineMs: k.deadlineMs };
        if (s && unchangedSince(known, s, at, preview, PAGE)) resampled.push({ k, s });
        else changed.push(k);
      });
    }
    const quiet = await this.companionsStillAbsent(resampled, changed);
    const withChannel = quiet.filter((k) => k.channel !== undefined);
    const numsub = new Map<string, number>();
    const channels = [...new Set(withChannel.map((k) => k.channel!))];
    for (let i = 0; i < channels.length; i += NUMSUB_BATCH) {
      const reply = await this.metered("numsub", 1, () => this.port.numsub(channels.slice(i, i + NUMSUB_BATCH)));
      for (const [c, n] of parsePubsubNumsub(reply)) numsub.set(c, n);
    }
    const at = this.now();
    for (const k of quiet) {
      if (k.channel !== undefined && (numsub.get(k.channel) ?? 0) !== (k.subscribers ?? 0)) changed.push(k);
      else k.readAtMs = at;
    }
    return changed;
  }

  /**
   * Of the locks the cheap re-read found unchanged, those with companion keys keep that verdict only if one EXISTS
   * of their companions (named again from the re-read: the same content names the same keys) counts none; the rest
   * go to `changed`. Returns the locks that stay quiet.
   */
  private async companionsStillAbsent(
    resampled: ReadonlyArray<{ k: KnownKey; s: KeySample }>,
    changed: KnownKey[],
  ): Promise<KnownKey[]> {
    const quiet: KnownKey[] = [];
    const checks: Array<{ k: KnownKey; names: Buffer[] }> = [];
    for (const { k, s } of resampled) {
      if (!k.companions) {
        quiet.push(k);
        continue;
      }
      const names = companionKeysFor(keyBytes(k.name).toString("utf8"), s);
      if (names.length === 0) changed.push(k);
      else checks.push({ k, names: names.map((n) => Buffer.from(n, "utf8")) });
    }
    const port = this.port;
    for (let i = 0; i < checks.length; i += SAMPLE_BATCH) {
      const batch = checks.slice(i, i + SAMPLE_BATCH);
      const counts = await this.metered("exists", batch.length, () => port.countExisting!(batch.map((c) => c.names)));
      batch.forEach(({ k }, j) => (counts[j] === 0 ? quiet : changed).push(k));
    }
    return quiet;
  }

  /** When the earliest known lease ends (ms, by this source's clock), or null. */
  nextDeadlineMs(): number | null {
    return this.deadlines.peek();
  }

  /**
   * Re-reads the locks whose lease should have ended by now: the server announces an expiry only when it really
   * deletes the key, which can lag by seconds, and a direct read both proves it gone and makes the server delete it.
   */
  async refreshDue(): Promise<TrackerOutput> {
    const none: TrackerOutput = { events: [], upserts: [], removed: [] };
    const now = this.now();
    const due: KnownKey[] = [];
    for (const { atMs, key } of this.deadlines.popDue(now)) {
      const k = this.known.get(key);
      if (k && (k.deadlineMs === atMs || k.checkAtMs === atMs)) due.push(k);
    }
    if (due.length === 0) return none;
    try {
      return await this.refresh(due, false, "lease-end");
    } catch {
      for (const d of due) this.dirty.add(d.name);
      return none;
    }
  }

  private noteDeadline(k: KnownKey, atMs: number, pttl: number): void {
    if (pttl < 0) {
      k.deadlineMs = undefined;
      return;
    }
    // One millisecond past the end: PTTL rounds down, and a read at the very end may still find the key.
    const deadline = atMs + pttl + 1;
    if (k.deadlineMs === deadline) return;
    k.deadlineMs = deadline;
    this.deadlines.push(deadline, k.name);
    if (this.deadlines.size > 2 * this.known.size + 1000) {
      this.deadlines.compact((at, key) => {
        const k = this.known.get(key);
        return k !== undefined && (k.deadlineMs === at || k.checkAtMs === at);
      });
    }
  }

  /**
   * Track mode re-reads a quiet lock only when it changes, but some hazards appear with time alone: a watchdog
   * renewing every P ms that stops shows as renewals-stopped after about 2P, and the lock is re-read once at that
   * moment (one heap entry, like its lease end), so the hazard says when it expires. A hold growing too long needs
   * no read: the tracker's reviseHazards raises it at the limit. Re-reading for it made every lock of a first read
   * due at the same moment, MAX_HOLD_MS later: 100,000 forced reads at once, minutes of the budget's time.
   */
  private scheduleChecks(out: TrackerOutput): void {
    if (this.detection !== "track") return;
    const now = this.now();
    for (const ev of out.events) {
      const k = this.keysById.get(ev.lockId);
      if (!k) continue;
      let at: number | undefined;
      if (ev.type === "renewed") {
        const period = k.renewedAtMs !== undefined ? now - k.renewedAtMs : undefined;
        k.renewedAtMs = now;
        if (period !== undefined && period > 0) at = now + 2 * period + 500;
      } else if (ev.type === "acquired" || ev.type === "owner-changed") {
        k.renewedAtMs = undefined;
        k.checkAtMs = undefined; // the previous holding's renewals say nothing about this one
      }
      if (at === undefined) continue;
      k.checkAtMs = at;
      this.deadlines.push(at, k.name);
    }
  }

  /** One timer for the earliest lease end (only with a push target; unit tests call refreshDue themselves). */
  private armDeadlineTimer(): void {
    const push = this.opts.push;
    if (!push || this.closed || this.dueRunning) return;
    const next = this.deadlines.peek();
    if (next === null || next >= this.deadlineTimerAt) return;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimerAt = next;
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = null;
        this.deadlineTimerAt = Infinity;
        this.dueRunning = true;
        void this.refreshDue()
          .then((out) => push(out))
          .catch(() => undefined)
          .finally(() => {
            this.dueRunning = false;
            this.armDeadlineTimer();
          });
      },
      Math.max(0, next - this.now()),
    );
    this.deadlineTimer.unref?.();
  }

  /**
   * Every 10 s, the server's account of its commands' cost (one INFO), which also settles what was charged since
   * the last read (CommandCosts); refused or failing, the charges stand. Within a second instead while the budget
   * binds (more than a second's allowance charged since the last read: a paced SCAN pass) or after a reply time was
   * charged for want of an account (a fresh server: the first INFO comes before the first SCAN; under CPU
   * contention the first pass's reply times alone were seconds of debt, with no SCAN step meanwhile).
   */
  private async readCommandCosts(): Promise<void> {
    if (this.budget.unlimited || !this.port.commandStats) return;
    const now = this.now();
    if (now - this.costsReadAtMs < (this.costs.awaiting(this.budget.fraction * 1000) ? 1000 : 10_000)) return;
    this.costsReadAtMs = now;
    try {
      this.budget.correct(this.costs.update(await this.port.commandStats()));
    } catch {
      // INFO commandstats refused: the budget charges reply times, an upper bound
      this.costs.forget();
    }
  }

  /**
   * Runs one batch of lockscope's commands against the server-time budget: charged at the server's own account
   * of such commands when known (a reply time on a loaded agent host is mostly the agent's waiting), else at the
   * reply time; either way settled at the next read of the account.
   */
  private metered<T>(kind: CommandKind, units: number, fn: () => Promise<T>): Promise<T> {
    const estimate = this.costs.estimateMs(kind, units);
    return this.budget.measure(fn, estimate, (ms) => this.costs.charged(kind, units, ms, estimate === undefined));
  }

  /**
   * INFO server's run_id, every poll, also in track mode: reading it only every 10 s (and on a resync) was tried
   * and lost the "server-restarted" reason of a quick restart (tests/integration/redis-lifecycle.test.ts); one INFO
   * a second is a small share of the commands.
   */
  private async checkRunId(): Promise<boolean> {
    const id = await this.port.runId();
    const restarted = this.runId !== null && id !== "" && id !== this.runId;
    this.runId = id;
    return restarted;
  }

  /**
   * The COUNT of this poll's SCAN steps. While the budget paces the pass, sized so that a step takes about
   * scanStepUsec of the server's time (the server's account of the last steps, per key asked; about a
   * microsecond a key until it is known): another client's command that arrives during a step waits for all of it,
   * and a paced COUNT 1000 step at 10,000,000 keys took 3.4 to 4.2 ms. With no budget, or no step target,
   * scanCount: a pass as fast as it goes, each step's round trip amortised over the most keys.
   */
  private stepCount(): number {
    const max = this.opts.scanCount;
    const target = this.opts.scanStepUsec ?? 0;
    if (target <= 0 || this.budget.unlimited) return max;
    return this.costs.scanCountFor(target, max) ?? Math.max(1, Math.min(max, Math.floor(target)));
  }

  /**
   * Advances the SCAN pass within the poll's budget; returns matching keys not tracked yet (none of `skip`), or,
   * given a reader, hands them to it as they are found. Each SCAN step is sent before the previous step's keys are
   * matched, so the server works on it meanwhile (one step in flight, decided as before: within both budgets).
   */
  private async discover(
    reader: BatchReader<KnownKey, BatchRead> | null,
    skip: ReadonlySet<string>,
  ): Promise<KnownKey[]> {
    const found: KnownKey[] = [];
    // Two companions of one lock name the same owner, and a pass may return a key twice: each is read once.
    const seen = new Set(skip);
    const add = (name: string, entry?: KnownKey) => {
      if (seen.has(name)) return;
      seen.add(name);
      const item = entry ?? knownKey(name, "");
      if (reader) reader.add(item);
      else found.push(item);
    };
    const budget = this.opts.visitBudgetPerPoll;
    let spent = this.known.size * 4;
    if (this.cursor === "0") this.passStartedMs = this.now();
    // In track mode known keys are not re-read each poll, so they cost the visit budget nothing.
    if (this.detection === "track") spent = 0;
    // The server-time budget paces the pass: no step while lockscope's recent commands cost more than allowed.
    if (!this.budget.allows()) return [];
    // With no budget at all, a pass from its start walks the two halves of the table at once (scanHalves).
    const split = this.cursor === "0" && budget === 0 && this.budget.unlimited && this.port.halvesScan?.() === true;
    const lanes = split ? scanHalves() : [{ cursor: this.cursor, ends: (c: string) => c === "0" }];
    const count = this.stepCount();
    this.lastStepCount = count;
    const step = (cursor: string) => this.metered("scan", count, () => this.port.scan(cursor, count, this.scanMatch));
    // Steps in flight, answered in the order sent (one connection); at least one per poll, so discovery always
    // moves on even when refreshing known keys used the budget. A split pass that fails part-way starts again
    // from 0 at the next poll (its cursor is only kept when one walk is all of it).
    const inFlight = lanes.map((lane) => ({ lane, reply: step(lane.cursor) }));
    for (const f of inFlight) f.reply.catch(() => undefined);
    let open = lanes.length;
    while (inFlight.length > 0) {
      const { lane, reply } = inFlight.shift()!;
      const { cursor, keys } = await reply;
      spent += count;
      const laneDone = lane.ends(cursor);
      if (laneDone) open--;
      if (!split) this.cursor = cursor;
      if (!laneDone && (budget === 0 || spent < budget) && this.budget.allows()) {
        const next = step(cursor);
        // Awaited on a later turn; a failure meanwhile must not count as unhandled.
        next.catch(() => undefined);
        inFlight.push({ lane, reply: next });
      }
      for (const key of keys) {
        // Most scanned keys fail the byte test and never become a string.
        if (!this.mayMatch(key)) continue;
        const k = key.toString("latin1");
        if (!this.matches(k)) continue;
        // A Redisson companion (redisson_lock_queue:{name}) names its lock, whose own name may match no pattern. The
        // lock is read with it even when already tracked: a companion folds into its lock only when both are read
        // together, and a fair lock's queue written after the lock was first seen was listed as a lock of its own.
        const owner = companionOwner(key.toString("utf8"));
        const ownerName = owner === null ? null : Buffer.from(owner, "utf8").toString("latin1");
        const entry = this.known.get(k);
        // A known key is not read again here, except a companion whose lock is not known: the lock was released
        // (its companions stay known: a companion's announcement re-reads the lock, not the companion) and is not
        // named by a pattern, so without this it was never seen again after its first release.
        if (entry && (ownerName === null || this.known.has(ownerName))) continue;
        // A string, not the reply's Buffer: a key from the reply may be a view of the whole reply's memory.
        add(k, entry);
        if (ownerName !== null) add(ownerName, this.known.get(ownerName));
      }
      if (open === 0) {
        const end = this.now();
        this.lastScanMs = end - this.passStartedMs;
        this.lastScanAt = new Date(end).toISOString();
      }
    }
    return found;
  }

  /**
   * Keyspace notifications: re-reads just these keys now instead of waiting for the next poll. A companion key
   * refreshes the lock it belongs to; keys that match no lock pattern are ignored. Polling stays the source of
   * truth (notifications are fire-and-forget and `expired` fires late); events carry which path saw them.
   */
  async refreshNotified(keys: readonly Buffer[]): Promise<TrackerOutput> {
    const wanted = new Map<string, KnownKey>();
    for (const key of keys) {
      const text = key.toString("utf8");
      const owner = companionOwner(text);
      const target = owner !== null ? Buffer.from(owner, "utf8") : key;
      const k = target.toString("latin1");
      if (this.known.has(k) || this.matches(k) || this.ownsKnownQueue(target))
        wanted.set(k, this.known.get(k) ?? knownKey(k, ""));
    }
    if (wanted.size === 0) return { events: [], upserts: [], removed: [] };
    try {
      return await this.refresh([...wanted.values()], false, "notification");
    } catch {
      // In poll mode the next poll reads them anyway; in track mode it reads what is marked dirty.
      for (const w of wanted.values()) this.dirty.add(w.name);
      return { events: [], upserts: [], removed: [] };
    }
  }

  /**
   * A Redisson fair lock whose own name matches no pattern, announced while not tracked, whose queue or waiters'
   * deadlines are known: it was tracked, released (its companions stay known), and is taken again. Read at once
   * rather than at the next SCAN pass's visit of its queue, which on a large keyspace can be an hour away.
   */
  private ownsKnownQueue(name: Buffer): boolean {
    const text = name.toString("utf8");
    return [LOCK_QUEUE, LOCK_TIMEOUT].some((p) =>
      this.known.has(Buffer.from(prefixName(p, text), "utf8").toString("latin1")),
    );
  }

  /**
   * Reads `targets` and applies what was read. With `discover` (a poll with an unlimited budget), also the keys the
   * SCAN pass finds, read while the pass goes on (READS_IN_FLIGHT batches at a time: the pass is the critical path
   * and the reads fill its round trips). A paced poll runs the pass first and reads its keys with the targets, so
   * that the budget charges each batch alone (a reply time measured alongside another would count both).
   */
  private async refresh(
    targets: KnownKey[],
    restarted: boolean,
    observedBy: "poll" | "notification" | "lease-end",
    failoverFrom: string | null = null,
    discover = false,
  ): Promise<TrackerOutput> {
    this.refreshesRunning++;
    try {
      if (!discover) return await this.refreshKeys(targets, restarted, observedBy, failoverFrom);
      // Companion keys read during the pass, by name: the locks recognised after it see them too.
      const passRelated = new Map<string, KeySample>();
      const reader = new BatchReader(
        async (batch: KnownKey[]) => this.prepareBatch(await this.readBatch(batch), passRelated),
        SAMPLE_BATCH,
        READS_IN_FLIGHT,
      );
      const unique = uniqueKeys(targets);
      const discovered = this.discover(reader, new Set(unique.map((t) => t.name)));
      // The reads already started are awaited even when the pass fails, so none outlives this refresh.
      const reads = discovered.then(
        () => reader.finish(),
        async (err: unknown) => {
          await reader.finish().catch(() => undefined);
          throw err;
        },
      );
      return await this.refreshKeys(unique, restarted, observedBy, failoverFrom, await reads, passRelated);
    } finally {
      // With no refresh in flight, no sample older than a release can arrive any more.
      if (--this.refreshesRunning === 0) this.releasedAt.clear();
    }
  }

  /** Whether a sample of `k` read when the write sequence was `seq` predates a force-release of that key. */
  private releasedSince(k: string, seq: number): boolean {
    const at = this.releasedAt.get(k);
    return at !== undefined && at > seq;
  }

  /** One metered read of a batch of keys (pipelined TYPE, PTTL and the bounded read). */
  private async readBatch(batch: KnownKey[]): Promise<BatchRead> {
    const seq = this.writeSeq;
    const samples = await this.metered("read", batch.length, () =>
      this.port.sample(
        batch.map((b) => keyBytes(b.name)),
        batch.map((b) => b.type || undefined),
        this.opts.valuePreviewBytes,
      ),
    );
    const at = this.now();
    const facts = samples.map((s, j) => {
      const text = s.key.toString("utf8");
      const digest = contentDigest(s, this.opts.valuePreviewBytes, PAGE) ?? undefined;
      return { id: batch[j]!.id ?? this.idOf(s.key), text, digest, companions: companionKeysFor(text, s) };
    });
    return { batch, samples, at, seq, facts };
  }

  /**
   * Companion keys, one group per lock: name -> sample. Most locks have none of theirs (no waiters, no read
   * holds): one EXISTS per group that counts 0 stands for their reads (each name then reads as gone, as its read
   * would show), SAMPLE_BATCH groups a pipeline; the names of the other groups, and every group on a port without
   * EXISTS or when it fails, get bounded reads, SAMPLE_BATCH at a time. In the discovery bench 2,000 EXISTS replace
   * the reads of 3,500 names after the pass (at about 4.5 µs of the agent's CPU per command, 2 to 5 commands each).
   */
  private async readCompanions(groups: ReadonlyArray<readonly string[]>): Promise<Map<string, KeySample>> {
    const out = new Map<string, KeySample>();
    const port = this.port;
    let unread: Array<readonly string[]> = [...groups];
    if (port.countExisting && groups.length > 0) {
      unread = [];
      for (let i = 0; i < groups.length; i += SAMPLE_BATCH) {
        const batch = groups.slice(i, i + SAMPLE_BATCH);
        const counts = await this.metered("exists", batch.length, () =>
          port.countExisting!(batch.map((g) => g.map((c) => Buffer.from(c, "utf8")))),
        );
        batch.forEach((g, j) => {
          if (counts[j] !== 0) unread.push(g);
          else for (const c of g) out.set(c, { key: Buffer.from(c, "utf8"), type: "none", pttl: -2 });
        });
      }
    }
    const unique = [...new Set(unread.flat())].filter((c) => !out.has(c));
    for (let i = 0; i < unique.length; i += SAMPLE_BATCH) {
      const batch = unique.slice(i, i + SAMPLE_BATCH);
      const samples = await this.metered("read", batch.length, () =>
        this.port.sample(
          batch.map((c) => Buffer.from(c, "utf8")),
          [],
          this.opts.valuePreviewBytes,
        ),
      );
      samples.forEach((s, j) => out.set(batch[j]!, s));
    }
    return out;
  }

  /** Reads `all` batch by batch, then applies those reads and `readAlready` (in that order) to the tracker. */
  private async refreshKeys(
    all: KnownKey[],
    restarted: boolean,
    observedBy: "poll" | "notification" | "lease-end",
    failoverFrom: string | null,
    readAlready: readonly BatchRead[] = [],
    passRelated: ReadonlyMap<string, KeySample> = new Map(),
  ): Promise<TrackerOutput> {
    const sampled: Array<{
      s: KeySample;
      text: string;
      name: string;
      at: number;
      id: string;
      companions: string[];
      prepared: PreparedLock | undefined;
    }> = [];
    const gone: Array<{ id: string; atMs: number }> = [];
    const movedAway: string[] = [];
    const note = ({ batch, samples, at, seq, facts, prepared }: BatchRead) => {
      samples.forEach((s, j) => {
        const k = batch[j]!.name;
        // Released while this sample was on its way: the release already reported it; the next poll reads it anew.
        if (this.releasedSince(k, seq)) return;
        if (this.releasing.has(k)) {
          this.dirty.add(k);
          return;
        }
        const { id, text, digest } = facts[j]!;
        if (s.moved !== undefined) {
          // Resharding moved the key's slot to another cluster node, which reports it from now on: not a release.
          this.keysById.delete(id);
          if (this.known.delete(k)) movedAway.push(id);
          return;
        }
        if (s.pttl === -2 || s.type === "none") {
          this.keysById.delete(id);
          if (this.known.delete(k)) gone.push({ id, atMs: at });
          return;
        }
        const entry = this.known.get(k) ?? knownKey(k, s.type, id);
        entry.type = s.type;
        entry.id = id;
        entry.readAtMs = at;
        entry.digest = digest;
        entry.companions = undefined;
        if (!this.known.has(k)) this.known.set(k, entry);
        this.noteDeadline(entry, at, s.pttl);
        this.keysById.set(id, entry as IdentifiedKey);
        sampled.push({ s, text, name: k, at, id, companions: facts[j]!.companions, prepared: prepared?.[j] });
      });
    };
    for (let i = 0; i < all.length; i += SAMPLE_BATCH) note(await this.readBatch(all.slice(i, i + SAMPLE_BATCH)));
    for (const r of readAlready) note(r);

    // A key that only belongs to another lock (a Redisson fair-lock queue, a read hold's lease) folds into that
    // lock when the lock itself is present; alone, it is listed (a leftover queue is worth seeing).
    const related = new Map<string, KeySample>(sampled.map((x) => [x.text, x.s]));
    for (const [c, s] of passRelated) if (!related.has(c)) related.set(c, s);
    const locks: typeof sampled = [];
    const folded: string[] = [];
    for (const x of sampled) {
      const owner = companionOwner(x.text);
      if (owner !== null && related.has(owner)) folded.push(x.id);
      else locks.push(x);
    }
    const wanted: string[][] = [];
    const withCompanions: Array<{ entry: KnownKey; names: string[] }> = [];
    for (const x of locks) {
      const companionKeys = x.companions;
      const entry = companionKeys.length > 0 ? this.known.get(x.s.key.toString("latin1")) : undefined;
      if (entry) withCompanions.push({ entry, names: companionKeys });
      const unread = companionKeys.filter((c) => !related.has(c));
      if (unread.length > 0) wanted.push(unread);
    }
    // After the pass: reading them during it (a pipeline after each batch) made the pass longer on the loaded
    // bench machine than it saved after it.
    for (const [c, sample] of await this.readCompanions(wanted)) related.set(c, sample);
    // What such a lock shows depends on its companions too. While none of them exists, the sweep's cheap re-read
    // covers them with one EXISTS; once one exists, its content matters (a queue's waiters, a lease's TTL), which
    // EXISTS cannot vouch for: the sweep then reads the lock fully.
    for (const { entry, names } of withCompanions) {
      const absent = names.every((c) => {
        const r = related.get(c);
        return r !== undefined && r.moved === undefined && (r.pttl === -2 || r.type === "none");
      });
      if (absent && entry.digest !== undefined) entry.companions = true;
      else entry.digest = undefined;
    }

    // Locks a pass already recognised and built (prepareBatch) are taken as they are, in the same order.
    const fresh = locks.filter((x) => x.prepared === undefined);
    const made = await this.recogniseAndBuild(fresh, related);
    const madeFor = new Map(fresh.map((x, i) => [x, made[i]!]));
    const built = locks.map((x) => {
      const p = x.prepared ?? madeFor.get(x)!;
      const name = x.s.key.toString("latin1");
      const entry = this.known.get(name);
      if (entry) {
        entry.channel = p.channel ?? undefined;
        entry.subscribers = p.channel === null ? undefined : p.subscribers;
      }
      return { lock: p.lock, name, observedAtMs: x.at };
    });
    if (observedBy === "poll" && this.annotator) {
      // The annotator compares every present lock with the replicas, poll after poll. In track mode a poll re-reads
      // only some locks, so it is given all tracked ones (the same list while none came or went), and a lock whose
      // hazards changed is re-read next poll.
      const read = built.map(({ lock, name }) => this.keysById.get(lock.id) ?? { id: lock.id, name });
      const handed = this.detection === "track" ? this.handOver(read) : this.handNothing(read);
      let fresh: ReadonlyMap<string, readonly Hazard[]> = new Map();
      try {
        fresh = await this.annotator.annotate(handed.locks, handed.changes);
      } catch {
        // another node's trouble never fails this node's poll
      }
      if (this.detection === "track") {
        const inBuilt = new Set(built.map((b) => b.lock.id));
        const codes = (h: readonly Hazard[] | undefined) => (h ?? []).map((x) => x.code).join();
        for (const id of new Set([...fresh.keys(), ...this.annotations.keys()])) {
          const k = this.keysById.get(id);
          if (!inBuilt.has(id) && k && codes(fresh.get(id)) !== codes(this.annotations.get(id))) this.dirty.add(k.name);
        }
      }
      this.annotations = fresh;
    }
    const present = built.map(({ lock, observedAtMs }) => ({ lock: this.withAnnotations(lock), observedAtMs }));
    this.tracker.drop([...folded, ...movedAway]);
    const detail: Record<string, string> = { observedBy };
    if (restarted || failoverFrom !== null) detail.reason = "server-restarted";
    if (failoverFrom !== null) detail.failoverFrom = failoverFrom;
    const out = this.tracker.apply(present, gone, detail);
    this.scheduleChecks(out);
    this.armDeadlineTimer();
    return out;
  }

  /**
   * Track mode: every tracked lock and the new ones of this poll's reads, for the annotator, with what changed since
   * the last poll (the tracker's changes and this poll's new locks). Going through all tracked locks at every poll
   * (here and in the annotator's bookkeeping) was most of a quiet agent's time at 100,000 locks, in pauses of 100
   * to 600 ms that held up the reads of changed locks (bench 2026-12-06, 1 M keys). A lock that went in this poll's
   * reads leaves the list at the next poll (one more replica check of it).
   */
  private handOver(read: readonly AnnotatedLock[]): {
    locks: readonly AnnotatedLock[];
    changes?: AnnotatedChanges;
  } {
    const log = this.tracker.takeChanges();
    const fresh = read.filter((x) => !this.tracker.has(x.id));
    let h = this.handed;
    if (log === null || h === null) {
      h = this.handed = { byId: new Map(), list: null, fresh: new Set() };
      for (const id of this.tracker.ids()) {
        const k = this.keysById.get(id);
        if (k) h.byId.set(id, k);
      }
      for (const x of fresh) h.byId.set(x.id, x);
      h.fresh = new Set(fresh.map((x) => x.id));
      return { locks: (h.list = [...h.byId.values()]) };
    }
    const added = new Set<string>();
    const removed = new Set<string>();
    const add = (x: AnnotatedLock) => {
      if (h.byId.has(x.id)) return;
      h.byId.set(x.id, x);
      // Gone and back between two polls: as if it had stayed.
      if (!removed.delete(x.id)) added.add(x.id);
    };
    const remove = (id: string) => {
      if (h.byId.delete(id)) removed.add(id);
    };
    for (const [id, tracked] of log) {
      const k = tracked ? this.keysById.get(id) : undefined;
      if (k) add(k);
      else if (!tracked) remove(id);
    }
    const freshIds = new Set(fresh.map((x) => x.id));
    // Last poll's new locks that the tracker did not take (a stale read) are not kept on the list.
    for (const id of h.fresh) if (!freshIds.has(id) && !this.tracker.has(id)) remove(id);
    for (const x of fresh) add(x);
    h.fresh = freshIds;
    if (added.size > 0 || removed.size > 0) h.list = null;
    h.list ??= [...h.byId.values()];
    return { locks: h.list, changes: { added: [...added], removed: [...removed] } };
  }

  /** Poll mode hands this poll's reads (every lock) and keeps no list; the tracker's changes are not needed. */
  private handNothing(read: readonly AnnotatedLock[]): {
    locks: readonly AnnotatedLock[];
    changes?: AnnotatedChanges;
  } {
    this.handed = null;
    this.tracker.takeChanges();
    return { locks: read };
  }

  /**
   * Recognises and builds these locks, with their companions' samples in `related`: the server's fingerprints of
   * long values, the recognisers, and the subscribers of Redisson unlock channels (PUBSUB NUMSUB).
   */
  private async recogniseAndBuild(
    items: ReadonlyArray<{ s: KeySample; text: string; name: string; at: number; id: string }>,
    related: ReadonlyMap<string, KeySample>,
  ): Promise<PreparedLock[]> {
    const serverSha1 = await this.serverFingerprints(items.map((x) => x.s));
    const recognised = items.map((x) => ({ x, rec: recognise(x.s, x.at, related) }));
    const channels = [
      ...new Set(recognised.map(({ x, rec }) => pubsubChannelFor(x.text, rec)).filter((c) => c !== null)),
    ];
    const numsub = new Map<string, number>();
    for (let i = 0; i < channels.length; i += NUMSUB_BATCH) {
      const reply = await this.metered("numsub", 1, () => this.port.numsub(channels.slice(i, i + NUMSUB_BATCH)));
      for (const [k, v] of parsePubsubNumsub(reply)) numsub.set(k, v);
    }
    return recognised.map(({ x, rec }) => {
      const channel = pubsubChannelFor(x.text, rec);
      return {
        lock: this.build(x.s, withSubscriberHint(x.text, rec, numsub), x.at, x.id, serverSha1.get(x.s.key), x.name),
        channel,
        subscribers: channel === null ? 0 : (numsub.get(channel) ?? 0),
      };
    });
  }

  /**
   * With an unlimited budget, a batch of new keys is recognised and built as soon as it is read, while the SCAN
   * pass goes on: after the pass only the tracker's intake is left. What needs every sample of the poll stays after
   * it: the keys that belong to another lock (companionOwner: folded into it when it is present, else listed
   * alone) and every check against a force-release that may finish meanwhile (refreshKeys' note). A lock's own
   * companions are asked for here (readCompanions: one EXISTS when none exists), and kept in `passRelated`.
   */
  private async prepareBatch(read: BatchRead, passRelated: Map<string, KeySample>): Promise<BatchRead> {
    const { samples, facts, at } = read;
    const related = new Map<string, KeySample>();
    samples.forEach((s, j) => related.set(facts[j]!.text, s));
    const candidates = samples.flatMap((s, j) =>
      s.moved === undefined && s.pttl !== -2 && s.type !== "none" && companionOwner(facts[j]!.text) === null ? [j] : [],
    );
    for (const j of candidates) {
      for (const c of facts[j]!.companions) {
        const earlier = passRelated.get(c);
        if (earlier && !related.has(c)) related.set(c, earlier);
      }
    }
    const wanted = candidates
      .map((j) => facts[j]!.companions.filter((c) => !related.has(c)))
      .filter((names) => names.length > 0);
    for (const [c, sample] of await this.readCompanions(wanted)) {
      related.set(c, sample);
      passRelated.set(c, sample);
    }
    const made = await this.recogniseAndBuild(
      candidates.map((j) => ({
        s: samples[j]!,
        text: facts[j]!.text,
        name: read.batch[j]!.name,
        at,
        id: facts[j]!.id,
      })),
      related,
    );
    const prepared: Array<PreparedLock | undefined> = samples.map(() => undefined);
    candidates.forEach((j, i) => (prepared[j] = made[i]));
    return { ...read, prepared };
  }

  /**
   * SHA-1 of the whole value of string locks longer than the prefix read (rare: tokens are short), computed by the
   * server so a value is never transferred; it is what tells two holders apart whose values share that prefix.
   */
  private async serverFingerprints(samples: readonly KeySample[]): Promise<Map<Buffer, string | null>> {
    const out = new Map<Buffer, string | null>();
    const long = samples.filter(needsServerFingerprint);
    if (long.length === 0 || !this.port.fingerprints) return out;
    try {
      const port = this.port;
      const digests = await this.metered("fingerprint", long.length, () =>
        port.fingerprints!(
          long.map((x) => x.key),
          MAX_RELEASE_VALUE_BYTES,
        ),
      );
      long.forEach((x, i) => out.set(x.key, digests[i] ?? null));
    } catch {
      // Refused (an ACL without EVALSHA) or failed: such locks carry no fingerprint and cannot be force-released.
    }
    return out;
  }

  private idOf(key: Buffer): string {
    return lockId("redis", this.idScope, key);
  }

  private withAnnotations(lock: ObservedLock): ObservedLock {
    const extra = this.annotations.get(lock.id)?.filter((h) => !lock.hazards.some((x) => x.code === h.code));
    return extra?.length ? { ...lock, hazards: [...lock.hazards, ...extra] } : lock;
  }

  /**
   * Force-release on the operator's explicit request, through the one release runner: a fresh read, the owner and
   * the exact holding (fingerprint) checked, then one atomic conditional delete. Reports the removal at once.
   */
  async release(cmd: ReleaseCommand, writer: RedisReleasePort): Promise<ReleaseRun> {
    const known = this.keysById.get(cmd.lockId);
    if (!known) {
      return {
        result: { outcome: "nothing-to-do", message: "this agent no longer sees the lock", plan: [], perNode: [] },
        output: NO_OUTPUT,
      };
    }
    const key = keyBytes(known.name);
    if (cmd.purgeWaiter !== undefined) return this.purgeWaiter(cmd, key, writer);
    try {
      return await runRelease(this.releaseAdapter(key, writer), cmd);
    } finally {
      this.releasing.delete(key.toString("latin1"));
    }
  }

  private releaseAdapter(
    key: Buffer,
    writer: RedisReleasePort,
  ): ReleaseAdapter<{ sample: KeySample; lock: ObservedLock }, Exclude<ReleasePlan, { kind: "refuse" }>> {
    const node = this.sourceId;
    return {
      where: node,
      read: async () => {
        const [sample] = await this.port.sample([key], [undefined], this.opts.valuePreviewBytes);
        const sha1 = await this.serverFingerprints([sample!]);
        const atMs = this.now();
        return { sample: sample!, lock: this.build(sample!, recognise(sample!, atMs), atMs, undefined, sha1.get(key)) };
      },
      fingerprint: ({ lock }) => lock.ownerFingerprint ?? null,
      decide: ({ sample, lock }, cmd) => {
        const plan = planRelease(sample, lock.owner, lock.library, cmd, node);
        if (plan.kind === "refuse") return { kind: "stop", outcome: plan.result.outcome, message: plan.result.message };
        return { kind: "go", plan, steps: plan.steps };
      },
      dryRun: () => ({ message: "nothing deleted", perNode: [{ node, outcome: "dry-run" }] }),
      write: async (_r, plan, cmd) => {
        this.releasing.add(key.toString("latin1"));
        const hex = fingerprintHex(cmd.expectedFingerprint ?? "");
        let n: number;
        if (plan.kind === "string") {
          if (!hex) return [{ node, outcome: "refused", detail: "no exact holding to compare" }];
          n = await writer.compareAndDelete(key, hex, MAX_RELEASE_VALUE_BYTES);
        } else {
          n = await writer.deleteIfHashField(key, plan.field, plan.channel, "0");
        }
        if (n === 1) return [{ node, outcome: "released" }];
        if (n === -1) return [{ node, outcome: "refused", detail: `value over ${MAX_RELEASE_VALUE_BYTES} bytes` }];
        // Nothing deleted: say why from a fresh look (gone, or someone else's now).
        const [after] = await this.port.sample([key], [undefined], this.opts.valuePreviewBytes);
        const gone = after!.pttl === -2 || after!.type === "none";
        return [{ node, outcome: gone ? "nothing-to-do" : "refused-owner-changed" }];
      },
      summarise: (perNode, _plan, cmd) => {
        const r = perNode[0]!;
        if (r.outcome === "released") return { outcome: "released", message: `released by ${cmd.actor}` };
        if (r.outcome === "nothing-to-do")
          return { outcome: "nothing-to-do", message: "the lock went before it could be released" };
        if (r.outcome === "refused")
          return { outcome: "refused", message: `nothing deleted: ${r.detail ?? "refused"}` };
        return {
          outcome: "refused-owner-changed",
          message: "the holding changed just before the release: nothing deleted",
        };
      },
      settle: async (perNode, _plan, cmd) => {
        if (perNode[0]?.outcome !== "released") return null;
        const id = cmd.lockId;
        if (this.refreshesRunning > 0) this.releasedAt.set(key.toString("latin1"), ++this.writeSeq);
        this.known.delete(key.toString("latin1"));
        this.keysById.delete(id);
        return this.tracker.apply([], [{ id, atMs: this.now() }], { reason: "force-released", by: cmd.actor });
      },
    };
  }

  /**
   * Removes one dead waiter from a Redisson fair lock's queue (never the lock): only the exact queued entry the
   * operator saw, and only once its deadline has passed by the server's clock (one Lua call). The next poll shows
   * the shorter queue.
   */
  private async purgeWaiter(cmd: ReleaseCommand, key: Buffer, writer: RedisReleasePort): Promise<ReleaseRun> {
    const none: TrackerOutput = { events: [], upserts: [], removed: [] };
    const node = this.sourceId;
    const answer = (outcome: ReleaseResult["outcome"], message: string, plan: string[] = []) => ({
      result: { outcome, message, plan, perNode: [{ node, outcome }] },
      output: none,
    });
    const name = key.toString("utf8");
    const queueKey = Buffer.from(prefixName(LOCK_QUEUE, name), "utf8");
    const timeoutKey = Buffer.from(prefixName(LOCK_TIMEOUT, name), "utf8");
    try {
      const [queue] = await this.port.sample([queueKey], ["list"], this.opts.valuePreviewBytes);
      // The entry is named by its display text: only an entry shown whole (not cut, so the escaping is exact) can
      // be matched to exactly one queued value.
      const shown = cmd.purgeWaiter ?? "";
      const entry =
        cutPrefix(shown) === null ? queue?.list?.items.find((i) => escapeBytes(i, 128) === shown) : undefined;
      if (!entry) return answer("nothing-to-do", "that waiter is not queued any more");
      const steps = [
        `LREM ${escapeBytes(queueKey, 200)} ${cmd.purgeWaiter} and ZREM it from ${escapeBytes(timeoutKey, 200)} on ${node}, only if its deadline has passed`,
      ];
      if (cmd.dryRun) return answer("dry-run", "dry run: nothing removed", steps);
      const n = await writer.purgeFairWaiter(queueKey, timeoutKey, entry);
      if (n === 1) return answer("released", `waiter ${cmd.purgeWaiter} removed from the queue by ${cmd.actor}`, steps);
      if (n === -1) return answer("refused", "its deadline has not passed: the waiter may still be alive", steps);
      return answer("nothing-to-do", "that waiter left the queue before it could be removed", steps);
    } catch (err) {
      return answer("error", `purge failed on ${node}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private build(
    s: KeySample,
    rec: Recognition,
    atMs: number,
    id = this.idOf(s.key),
    serverSha1?: string | null,
    /** The known key's name (KnownKey.name), which a printable key's resource equals. */
    name?: string,
  ): ObservedLock {
    const ttlMs = s.pttl >= 0 ? s.pttl : null;
    // One literal with every common field, no spread: spread-in fields made V8 keep each lock's fields partly in a
    // separate property array (13 MB at 100,000 locks in a heap snapshot, 2026-12-06). An absent fingerprint is
    // undefined, which JSON leaves out as before.
    const hazards = [
      ...staticHazards({ backend: "redis", ttlMs, kind: s.type }, { ttlByDesign: NO_TTL_BY_DESIGN.has(rec.rule) }),
      ...(rec.hazards ?? []),
    ];
    // Equal strings kept once: a printable name escapes to itself (the known key's name), and a short token's
    // preview is its owner: two strings a lock fewer (8 MB at 100,000 locks in a heap snapshot, 2026-12-07).
    const resource = escapeBytes(s.key, 512);
    const preview = previewSample(s);
    const lock: ObservedLock = {
      id,
      backend: "redis",
      source: this.sourceId,
      resource: resource === name ? name : resource,
      owner: rec.owner,
      ownerFingerprint: sampleFingerprint(s, rec.owner, serverSha1) || undefined,
      library: rec.library,
      rule: rec.rule,
      ttlMs,
      holder: rec.holder,
      waiters: rec.waiters.length > 0 ? rec.waiters : none(),
      observedAt: new Date(atMs).toISOString(),
      kind: s.type,
      valuePreview: preview === rec.owner ? rec.owner : preview,
      hazards: hazards.length > 0 ? hazards : none(),
      agentId: this.opts.agentId,
    };
    // Permit semaphores only.
    if (rec.holders) lock.holders = rec.holders;
    if (rec.holdersTotal !== undefined) lock.holdersTotal = rec.holdersTotal;
    return lock;
  }
}

/** The same key asked for twice in one read (announced and due at once) is read once. */
function uniqueKeys(keys: KnownKey[]): KnownKey[] {
  if (keys.length < 2) return keys;
  return [...new Map(keys.map((k) => [k.name, k])).values()];
}
