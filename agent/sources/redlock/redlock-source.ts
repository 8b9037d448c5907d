import type { Lock, SourceStatus } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseNodeResult } from "../../../lib/contract/release";
import type { WatchedSource } from "../source-port";
import { escapeBytes } from "../../core/escape";
import { compilePatterns } from "../../core/glob";
import { lockId } from "../../core/lock-id";
import { append, LockTracker, mergeInto, type ObservedLock, type TrackerOutput } from "../../core/tracker";
import { fingerprintHex, fingerprintOf } from "../../release/fingerprint";
import { NO_OUTPUT, runRelease, type ReleaseAdapter, type ReleaseRun } from "../../release/release-runner";
import { previewSample } from "../redis/preview";
import { MAX_RELEASE_VALUE_BYTES, type RedisReleasePort } from "../redis/redis-release";
import type { KeySample } from "../redis/redis-port";
import { estimateOffset, groupSkew, parseTimeReply, type ClockOffset, type GroupSkew } from "./clock-skew";
import { evaluateQuorum, quorumSize, type NodeAnswer, type PriorHold, type QuorumResult } from "./redlock-quorum";
import { redlockNodeStatus } from "./redlock-node-status";
import type { RedlockNodePort } from "./redlock-port";
import {
  aggregateRelease,
  decideRelease,
  dryRunNode,
  releaseSteps,
  shortToken,
  type NodeReading,
} from "./redlock-release";
import { QuorumUpsertFilter } from "./redlock-upserts";
import { DeadlineHeap } from "../../core/deadline-heap";
import { MAX_PENDING_NOTIFIED, NotificationBatcher } from "../redis/notification-batcher";
import { ServerTimeBudget } from "../redis/server-time-budget";

export interface RedlockNode {
  /** As in the configuration with credentials removed (RedisTarget.id). */
  id: string;
  port: RedlockNodePort;
  /** The conditional deletes of a force-release (redis-client.ts IoredisReleasePort); polls never use it. */
  writer?: RedisReleasePort;
}

export interface RedlockSourceOptions {
  /** The group's name: Lock.source and SourceStatus.id. */
  group: string;
  agentId: string;
  newId: () => string;
  lockPatterns: readonly string[];
  /**
   * Deadline for each node in each of a poll's two rounds (discovery, then reads). A node that has not answered by
   * then is left out of this poll and never waited for: a poll with a frozen node takes one timeout, not more.
   */
  nodeTimeoutMs: number;
  /** An answering node slower than this is marked slow; default min(250, nodeTimeoutMs / 2). */
  slowMs?: number;
  /** Polls in a row without an answer after which a silent (frozen) node counts as down rather than slow. */
  downAfterMisses?: number;
  scanCount?: number;
  /** Keys SCAN visits per node per poll at the most; the pass continues at the next poll. */
  scanBudgetPerPoll?: number;
  /**
   * REDIS_SERVER_TIME_BUDGET_PERCENT / 100: share of one core of EACH node for lockscope's commands (0 or unset:
   * unlimited). Every command batch is charged to its node at its reply time (an upper bound of the server time it
   * took); SCAN steps, the optional work, run only while the node's budget is not spent; reads always run.
   */
  serverTimeBudgetFraction?: number;
  /** Test hook: the clock each node's budget refills by (ms), per node id. */
  budgetClock?: (nodeId: string) => () => number;
  /** Also treat keys outside the lock patterns as resources when their value is a node-redlock token (32 hex). */
  discoverByValue?: boolean;
  /** Resources tracked per group at most; beyond it new ones are not followed and the status says so. */
  maxResources?: number;
  /** Test hook: ms added to a node's measured clock offset, to show a node whose clock runs ahead or behind. */
  clockOffsetMs?: Readonly<Record<string, number>>;
  log?: (line: string) => void;
  /** Wall clock for observations (ms). */
  now?: () => number;
  /** Sub-millisecond epoch clock for round trips and TIME offsets. */
  clock?: () => number;
  /**
   * REDIS_CHANGE_DETECTION. "track": a node whose CLIENT TRACKING is live (setTracking) re-reads only what it
   * announced (invalidated), what is due at its lease end, new keys and the safety sweep; a node not tracked is
   * polled in full. "poll" (default): every known resource is re-read on every node at every poll.
   */
  changeDetection?: "track" | "poll";
  /** Track mode: each known resource is re-read on every node about this often even when nothing announced it. */
  sweepMs?: number;
  /**
   * Where changes seen between polls go (announced keys, lease ends); with it the source runs one timer for the
   * earliest lease end. Without it (unit tests) they are read at the next poll.
   */
  push?: (output: TrackerOutput) => void;
}

export interface RedlockNodeHealth {
  node: string;
  state: "up" | "down" | "slow";
  /** Why the node is down or slow (connection error, no answer within the deadline). */
  error?: string;
  /** Round trip of TIME at the last poll that it answered. */
  latencyMs?: number;
  /** Node clock minus agent clock (ms) at the last answer; compare nodes with each other, not with the agent. */
  clockOffsetMs?: number;
  lastAnswerAt?: string;
  /** Consecutive polls without an answer. */
  missedPolls: number;
}

export interface RedlockGroupHealth {
  group: string;
  nodes: RedlockNodeHealth[];
  needed: number;
  answering: number;
  /** Clock skew across the nodes that answered, with its certain lower bound; null with fewer than two. */
  skew: GroupSkew | null;
  at: string | null;
}

/** Batch size of pipelined reads: keeps each reply small and lets other clients' commands interleave. */
const SAMPLE_BATCH = 250;
/** Values read per key: enough for any lock token; longer values are compared by prefix and length. */
const VALUE_BYTES = 128;
const TOKEN_CHARS = 128;
const NODE_REDLOCK_TOKEN = /^[0-9a-f]{32}$/;
const REDISSON_FIELD = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:\d+$/;

interface NodeState {
  node: RedlockNode;
  cursor: string;
  /** Key type last seen per resource on this node, so reads need no TYPE round trip. */
  types: Map<string, string>;
  misses: number;
  /** A command from an earlier poll has not settled yet: do not queue more behind it on a stuck connection. */
  busy: boolean;
  connectionError?: string;
  health: RedlockNodeHealth;
  /** Track mode: the server announces changes of what this node's reader read (CLIENT TRACKING live). */
  tracked: boolean;
  /** Why the node is polled in full although track mode is configured (refused, lost, not enabled yet). */
  trackNote?: string;
  /** Every known resource must be re-read on this node (tracking just (re-)enabled, a flush, silent before). */
  resync: boolean;
  /**
   * Track mode: this node's last reading of each known resource, used while the node is tracked and nothing was
   * announced for the key (an announcement deletes the entry), and only until its lease end.
   */
  cache: Map<string, Reading>;
  /** This node's share of server time for lockscope's commands. */
  budget: ServerTimeBudget;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; timedOut: boolean; error: string };

interface Discovery {
  latencyMs: number;
  offset: ClockOffset | null;
  cursor: string;
  found: Buffer[];
}

interface Reading {
  sample: KeySample;
  readAtMs: number;
}

/** One node's fresh read of one key during a release. */
interface KeyRead {
  sample: KeySample;
  readAtMs: number;
}

type Answer = Omit<NodeAnswer, "present" | "token" | "pttlMs" | "readAtMs">;

/** A release's fresh read of one resource across the group. */
interface GroupReading {
  reads: Array<Outcome<KeyRead>>;
  answers: NodeAnswer[];
  readings: NodeReading[];
  q: QuorumResult;
}

/** What the conditional delete on each node compares: a string's value, or a Redisson hash's holder field. */
type GroupPlan = { kind: "string" } | { kind: "hash"; field: Buffer; channel: string };

interface Memory {
  prior: PriorHold | null;
  /** Longest PTTL seen for the current owner's token: the best estimate of the duration it was set with. */
  leases: Map<string, number>;
  owner: string | null;
}

/**
 * Watches one Redlock group. Each poll asks every node at once, each under its own deadline: TIME (latency and
 * clock offset) and a bounded SCAN step first, then pipelined TYPE/PTTL/value reads of every resource seen on any
 * node. Each resource becomes one Lock whose quorum view is decided by evaluateQuorum from the nodes that answered.
 * Polls only read; the one write is `release`, an operator's guarded force-release through each node's writer.
 */
export class RedlockSource implements WatchedSource {
  readonly tracker: LockTracker;
  private readonly nodes: NodeState[];
  private readonly known = new Map<string, Buffer>();
  /** lockId -> raw key, to act on a lock the dashboard names by id. */
  private readonly keysById = new Map<string, Buffer>();
  /** Keys force-released (agent clock): a poll that read them before the release must not bring them back. */
  private readonly releasedAtMs = new Map<string, number>();
  /**
   * Keys whose force-release is writing right now. A read of such a key (by a poll, or by the refresh a node's
   * invalidation of the delete starts) is not applied: the release reports its own deletion, with who and why,
   * and a refresh that won the race would have reported it first as a plain release. They are re-read afterwards.
   */
  private readonly releasing = new Set<string>();
  private pollStartedMs = 0;
  private readonly memory = new Map<string, Memory>();
  private readonly upserts = new QuorumUpsertFilter();
  private readonly matches: (key: string) => boolean;
  private readonly now: () => number;
  private readonly clock: () => number;
  private readonly needed: number;
  private polled = false;
  private answering = 0;
  private skew: GroupSkew | null = null;
  private limitReached = false;
  private lastScanAt: string | undefined;
  private lastScanMs: number | undefined;
  /** Track mode: resources announced by some node, to be re-read on every node. */
  private readonly dirty = new Map<string, Buffer>();
  /** One entry per node reading with a lease: when it ends, the resource is re-read on every node. */
  private readonly deadlines = new DeadlineHeap();
  private deadlineTimer: NodeJS.Timeout | null = null;
  private deadlineTimerAt = Infinity;
  private readonly batcher: NotificationBatcher | null;
  private sweepIter: Iterator<Buffer> | null = null;
  private lastSweepMs: number | null = null;
  private sweepCredit = 0;
  /** Polls, announced reads and lease-end reads run one at a time, so no node gets two batches at once. */
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    nodes: readonly RedlockNode[],
    private readonly opts: RedlockSourceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.clock = opts.clock ?? (() => performance.timeOrigin + performance.now());
    this.tracker = new LockTracker({ agentId: opts.agentId, newId: opts.newId });
    this.needed = quorumSize(nodes.length);
    this.nodes = nodes.map((node) => ({
      node,
      cursor: "0",
      types: new Map(),
      misses: 0,
      busy: false,
      health: { node: node.id, state: "down", error: "not polled yet", missedPolls: 0 },
      tracked: false,
      resync: false,
      cache: new Map(),
      budget: new ServerTimeBudget(opts.serverTimeBudgetFraction ?? 0, opts.budgetClock?.(node.id)),
    }));
    const push = opts.push;
    this.batcher =
      push && this.tracking
        ? new NotificationBatcher(
            async (keys) => push(await this.refreshAnnounced(keys)),
            5,
            MAX_PENDING_NOTIFIED,
            () => this.nodes.forEach((n) => (n.resync = true)),
          )
        : null;
    // SCAN returns raw bytes; patterns are matched against the key's bytes read as latin1, one char per byte.
    this.matches = compilePatterns(opts.lockPatterns.map((p) => Buffer.from(p, "utf8").toString("latin1")));
  }

  status(): SourceStatus {
    const s: SourceStatus = {
      id: this.opts.group,
      kind: "redlock",
      up: this.polled && this.answering >= this.needed,
      locks: this.tracker.size,
      agentId: this.opts.agentId,
    };
    const problems = this.nodes.filter((n) => n.health.state !== "up" && n.health.error);
    const notes: string[] = [];
    if (!this.polled) notes.push("not polled yet");
    else if (problems.length > 0) {
      // Reported even while the group is up: a node down is what an operator of a Redlock group needs to see.
      notes.push(
        `${problems.length} of ${this.nodes.length} nodes not answering: ${problems.map((n) => `${n.node.id} (${n.health.error})`).join("; ")}`,
      );
    }
    if (this.limitReached) notes.push(`resource limit ${this.maxResources} reached: new resources are not followed`);
    if (notes.length > 0) s.error = notes.join("; ");
    if (this.lastScanAt) s.lastScanAt = this.lastScanAt;
    if (this.lastScanMs !== undefined) s.lastScanMs = this.lastScanMs;
    s.nodes = this.nodes.map((n) => {
      const ns = redlockNodeStatus(n.health, this.slowMs);
      ns.changeDetection = this.tracking && n.tracked ? "track" : "poll";
      if (this.tracking && !n.tracked) ns.note = n.trackNote ?? "client tracking not enabled yet";
      return ns;
    });
    s.changeDetection = this.tracking && this.nodes.every((n) => n.tracked) ? "track" : "poll";
    const polled = this.nodes.filter((n) => !n.tracked);
    if (this.tracking && polled.length > 0) {
      s.note = `CLIENT TRACKING not live on ${polled.length} of ${this.nodes.length} nodes, polled in full: ${polled
        .map((n) => `${n.node.id} (${n.trackNote ?? "not enabled yet"})`)
        .join("; ")}`;
    }
    return s;
  }

  private get tracking(): boolean {
    return this.opts.changeDetection === "track";
  }

  /**
   * A node's CLIENT TRACKING state (client-tracking.ts startTrackedReader): while "poll" the node is re-read in
   * full at each poll; back to "track", every known resource is re-read there once (what changed meanwhile is
   * unknown) and then only what it announces.
   */
  setTracking(nodeId: string, mode: "track" | "poll", note?: string): void {
    const n = this.nodes.find((x) => x.node.id === nodeId);
    if (!n) return;
    if (mode === "track") n.resync = true;
    else n.cache.clear();
    n.tracked = mode === "track";
    n.trackNote = note;
  }

  /** A node announced these keys (written, renewed, deleted, expired): each is re-read on every node. */
  invalidated(nodeId: string, keys: readonly Buffer[]): void {
    const n = this.nodes.find((x) => x.node.id === nodeId);
    for (const key of keys) {
      const k = key.toString("latin1");
      n?.cache.delete(k);
      if (!this.known.has(k) && !this.matches(k)) continue;
      if (this.batcher) this.batcher.add(key);
      else this.dirty.set(k, key);
    }
  }

  /** FLUSHALL or FLUSHDB on a node (an invalidation without keys): everything is re-read there. */
  flushed(nodeId: string): void {
    const n = this.nodes.find((x) => x.node.id === nodeId);
    if (!n) return;
    n.cache.clear();
    n.resync = true;
  }

  /** Stops the lease-end timer and the announced-key batcher (the source is being removed). */
  close(): void {
    this.closed = true;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
    this.batcher?.close();
  }

  /** One at a time: a poll, an announced read, a lease-end read. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private get slowMs(): number {
    return this.opts.slowMs ?? Math.min(250, this.opts.nodeTimeoutMs / 2);
  }

  locks(): Lock[] {
    return this.tracker.locks();
  }

  /** The agent routes a force-release of this lock here. */
  has(lockId: string): boolean {
    return this.tracker.has(lockId);
  }

  health(): RedlockGroupHealth {
    return {
      group: this.opts.group,
      nodes: this.nodes.map((n) => ({ ...n.health })),
      needed: this.needed,
      answering: this.answering,
      skew: this.skew,
      at: this.lastScanAt ?? null,
    };
  }

  /** Connection state from the node's client; its error is the reason shown when commands fail. */
  setConnection(nodeId: string, up: boolean, error?: string): void {
    const n = this.nodes.find((x) => x.node.id === nodeId);
    if (n) n.connectionError = up ? undefined : (error ?? "down");
  }

  /**
   * Force-release on an operator's request, through the one release runner. Re-reads the key on every node and
   * refuses unless the winning token is still the exact holding the operator saw; then sends the conditional
   * delete to every node at once, each under its own deadline (a frozen node costs one timeout), and reports each
   * node's answer. Nodes that looked absent or silent get the delete too: it is a no-op unless they hold the token.
   */
  async release(cmd: ReleaseCommand): Promise<ReleaseRun> {
    const key = this.keysById.get(cmd.lockId);
    if (!key) {
      const message = "this agent no longer sees the lock";
      return { result: { outcome: "nothing-to-do", message, plan: [], perNode: [] }, output: NO_OUTPUT };
    }
    try {
      return await runRelease(this.releaseAdapter(key), cmd);
    } finally {
      this.releasing.delete(key.toString("latin1"));
    }
  }

  /** Whether this read of k must be left to a force-release (writing now, or finished after the read began). */
  private leftToRelease(k: string, key: Buffer, readStartedMs: number): boolean {
    if (this.releasing.has(k)) {
      if (this.tracking) this.dirty.set(k, key); // re-read after the release, in case it deleted nothing
      return true;
    }
    const releasedAt = this.releasedAtMs.get(k);
    return releasedAt !== undefined && releasedAt >= readStartedMs;
  }

  private releaseAdapter(key: Buffer): ReleaseAdapter<GroupReading, GroupPlan> {
    const k = key.toString("latin1");
    const winnerSample = (r: GroupReading): KeySample | null => {
      const at = r.answers.findIndex((a) => a.present && a.token === r.q.token);
      const read = at >= 0 ? r.reads[at] : undefined;
      return read?.ok ? read.value.sample : null;
    };
    return {
      where: this.opts.group,
      read: async () => {
        const reads = await this.readKey(key);
        const nowMs = this.now();
        const answers = this.releaseAnswers(k, reads, nowMs);
        const mem = this.memory.get(k);
        const q = evaluateQuorum({
          group: this.opts.group,
          nowMs,
          answers,
          prior: mem?.prior ?? null,
          previousToken: mem?.owner ?? null,
          knownLeaseMs: mem?.leases,
        });
        const readings: NodeReading[] = answers.map((a) => {
          const r: NodeReading = { node: a.node, answered: a.answered, token: a.present ? a.token : null };
          if (a.error !== undefined) r.error = a.error;
          return r;
        });
        return { reads, answers, readings, q };
      },
      fingerprint: (r) => {
        const sample = winnerSample(r);
        return sample ? tokenFingerprint(sample) : null;
      },
      decide: (r, cmd) => {
        const readOnly = this.nodes.filter((n) => !n.node.writer).map((n) => n.node.id);
        if (readOnly.length > 0)
          return {
            kind: "stop",
            outcome: "refused",
            message: `no write access to ${readOnly.join(", ")}: nothing deleted`,
          };
        const decision = decideRelease({
          expectedOwner: cmd.expectedOwner,
          winner: r.q.token,
          votes: r.q.view.votes,
          needed: this.needed,
          readings: r.readings,
        });
        if (decision.kind === "stop") return { kind: "stop", ...decision.result };
        const sample = winnerSample(r);
        let format: GroupPlan;
        if (sample?.type === "string") {
          if ((sample.string?.length ?? 0) > MAX_RELEASE_VALUE_BYTES) {
            const message = `the value is over ${MAX_RELEASE_VALUE_BYTES} bytes; lockscope does not force-free it`;
            return { kind: "stop", outcome: "refused", message };
          }
          format = { kind: "string" };
        } else if (sample?.type === "hash" && sample.hash?.fields[0]) {
          // Redisson's RedLock: one RLock hash per node; its own unlock publishes on the lock's channel on each node.
          const redisson = recogniseToken(sample).library === "redisson";
          format = {
            kind: "hash",
            field: sample.hash.fields[0][0],
            channel: redisson ? `redisson_lock__channel:{${key.toString("utf8")}}` : "",
          };
        } else {
          const message = `a ${sample?.type ?? "unknown"} value cannot be released safely by lockscope`;
          return { kind: "stop", outcome: "refused", message };
        }
        const steps = releaseSteps(
          escapeBytes(key, 200),
          this.nodes.map((n) => n.node.id),
          cmd.expectedOwner,
          format,
        );
        return { kind: "go", plan: format, steps };
      },
      dryRun: (r, _plan, cmd) => ({
        message: `nothing deleted; ${r.q.view.votes} of ${r.q.view.nodes} nodes hold the token (${r.q.view.needed} needed)`,
        perNode: r.readings.map((x) => dryRunNode(x, cmd.expectedOwner)),
      }),
      write: async (_r, f, cmd) => {
        this.releasing.add(k);
        // The runner checked the fingerprint against the fresh read; each node compares it again, atomically.
        const hex = fingerprintHex(cmd.expectedFingerprint ?? "") ?? "";
        return Promise.all(
          this.nodes.map((n) =>
            this.deleteOn(n, key, (w) =>
              f.kind === "string"
                ? w.compareAndDelete(key, hex, MAX_RELEASE_VALUE_BYTES)
                : w.deleteIfHashField(key, f.field, f.channel, "0"),
            ),
          ),
        );
      },
      summarise: (perNode, _plan, cmd) => {
        const { outcome, message } = aggregateRelease(perNode, this.needed);
        return { outcome, message: `${message} (by ${cmd.actor})` };
      },
      settle: async (perNode, _plan, cmd) => {
        if (!perNode.some((r) => r.outcome === "released")) return null;
        // Keys left on nodes that did not confirm are residue of a released lock, not a quorum lost while valid.
        const left = this.memory.get(k);
        if (left) this.memory.set(k, { ...left, prior: null });
        this.releasedAtMs.set(k, this.now());
        const after = await this.readKey(key);
        const afterMs = this.now();
        const output = this.evaluateKey(
          key,
          this.releaseAnswers(k, after, afterMs),
          after.map((r) => (r.ok ? r.value.sample : undefined)),
          afterMs,
          { reason: "force-released", by: cmd.actor },
        );
        return this.upserts.filter(output);
      },
    };
  }

  /** Every node's fresh read of one key, each under its own deadline (not skipped while a poll is in flight). */
  private readKey(key: Buffer): Promise<Array<Outcome<KeyRead>>> {
    return Promise.all(
      this.nodes.map((n) =>
        this.within(
          n,
          async () => {
            const [sample] = await n.node.port.sample([key], [undefined], VALUE_BYTES);
            return { sample: sample!, readAtMs: this.now() };
          },
          `no answer within ${this.opts.nodeTimeoutMs} ms`,
        ),
      ),
    );
  }

  /** Votes from a release's reads, with each node's last known latency and clock for the view's other facts. */
  private releaseAnswers(k: string, reads: ReadonlyArray<Outcome<KeyRead>>, nowMs: number): NodeAnswer[] {
    return this.nodes.map((n, i) => {
      const r = reads[i]!;
      const h = n.health;
      const base: Answer = {
        node: n.node.id,
        state: r.ok ? (h.state === "down" ? "up" : h.state) : r.timedOut && h.state !== "down" ? "slow" : "down",
        answered: r.ok,
      };
      if (!r.ok) base.error = r.error;
      if (r.ok && h.latencyMs !== undefined) base.latencyMs = h.latencyMs;
      if (r.ok && h.clockOffsetMs !== undefined) {
        base.clockOffsetMs = h.clockOffsetMs;
        base.clockUncertaintyMs = (h.latencyMs ?? 0) / 2 + 0.001;
      }
      return this.answerFor(i, k, base, r.ok ? r.value : undefined, nowMs);
    });
  }

  /** One node's conditional delete under its deadline; when nothing was deleted, a fresh look says why. */
  private async deleteOn(
    n: NodeState,
    key: Buffer,
    del: (writer: RedisReleasePort) => Promise<number>,
  ): Promise<ReleaseNodeResult> {
    const node = n.node.id;
    const r = await this.within(
      n,
      async (): Promise<ReleaseNodeResult> => {
        if ((await del(n.node.writer!)) === 1) return { node, outcome: "released" };
        const [s] = await n.node.port.sample([key], [undefined], VALUE_BYTES);
        if (!s || s.type === "none" || s.pttl === -2) return { node, outcome: "nothing-to-do", detail: "key absent" };
        const token = tokenOf(s);
        return {
          node,
          outcome: "refused-owner-changed",
          detail: token === null ? `holds a ${s.type}` : `holds ${shortToken(token)}`,
        };
      },
      `no answer within ${this.opts.nodeTimeoutMs} ms`,
    );
    if (r.ok) return r.value;
    // A timed-out delete may still run when the node answers; it compares first, so it removes only this token.
    return { node, outcome: "error", detail: r.timedOut ? `${r.error}; the delete may still run there` : r.error };
  }

  /** One poll. Throws nothing: nodes that fail or stall are marked and left out; the rest are still evaluated. */
  poll(): Promise<TrackerOutput> {
    return this.serial(() => this.pollOnce());
  }

  private async pollOnce(): Promise<TrackerOutput> {
    const started = this.clock();
    this.pollStartedMs = this.now();
    for (const [k, at] of this.releasedAtMs) if (at < this.pollStartedMs) this.releasedAtMs.delete(k);
    const discovered = await Promise.all(this.nodes.map((n) => this.withDeadline(n, (port) => this.discover(n, port))));
    const found = new Map<string, Buffer>();
    discovered.forEach((d, i) => {
      if (!d.ok) return;
      const n = this.nodes[i]!;
      n.cursor = d.value.cursor;
      for (const key of d.value.found) found.set(key.toString("latin1"), key);
    });
    const admitted = this.admit(found);
    const all = [...this.known.values()];
    // Poll mode, or a node not tracked (refused, lost, resyncing, silent at the last poll): that node reads every
    // known resource, and every resource is evaluated. A tracked node reads only what is wanted this poll.
    const full = this.nodes.map((n) => !this.tracking || !n.tracked || n.resync || n.misses > 0);
    const wanted = this.tracking ? this.wantedNow(admitted) : [];
    // Every resource is evaluated while some node is read in full or does not answer (its votes are missing from
    // every view, as in poll mode); otherwise only the wanted ones, from fresh reads and the tracked nodes' last.
    const evaluateAll = this.nodes.some((_, i) => full[i] || !discovered[i]!.ok);
    const keys = !this.tracking || evaluateAll ? all : wanted;
    const nowMs = this.now();
    // Only nodes that answered the first round are asked again: a stalled node costs one deadline per poll, not two.
    const readings = await Promise.all(
      this.nodes.map((n, i) => {
        const d = discovered[i]!;
        if (!d.ok) return Promise.resolve<Outcome<Map<string, Reading>>>(d);
        const mine = full[i] ? all : this.withStale(n, wanted, keys, nowMs);
        return this.withDeadline(n, (port) => this.read(n, port, mine));
      }),
    );
    readings.forEach((r, i) => {
      if (!r.ok) return;
      if (full[i]) this.nodes[i]!.resync = false;
      this.keepReadings(this.nodes[i]!, r.value);
    });
    const answers = this.nodes.map((n, i) => this.settleNode(n, discovered[i]!, readings[i]!));
    const out = this.evaluate(keys, (i, k) => this.readingOf(i, k, readings[i]!, full[i]!), answers);
    // Quiet locks are not re-read in track mode: what only time changes (a hold too long) is revised here.
    if (keys !== all) append(out.upserts, this.tracker.reviseHazards(this.now()).upserts);
    const ended = this.clock();
    this.polled = true;
    this.lastScanAt = new Date(this.now()).toISOString();
    this.lastScanMs = Math.round(ended - started);
    this.armDeadlineTimer();
    return this.upserts.filter(out);
  }

  /**
   * Track mode: the resources to re-read on every tracked node this poll: new ones, announced ones, those whose
   * lease ended on some node, and the sweep's share (each known resource about once per sweepMs).
   */
  private wantedNow(admitted: readonly Buffer[]): Buffer[] {
    const out = new Map<string, Buffer>();
    for (const key of admitted) out.set(key.toString("latin1"), key);
    for (const [k, key] of this.dirty) if (this.known.has(k)) out.set(k, key);
    this.dirty.clear();
    for (const key of this.dueKeys()) out.set(key.toString("latin1"), key);
    for (const key of this.sweepSlice()) out.set(key.toString("latin1"), key);
    return [...out.values()];
  }

  /** A tracked node's reads: the wanted keys, plus evaluated ones it has no valid reading of (new, or lease over). */
  private withStale(n: NodeState, wanted: Buffer[], evaluated: Buffer[], nowMs: number): Buffer[] {
    if (evaluated === wanted) return wanted;
    const out = new Map<string, Buffer>(wanted.map((key) => [key.toString("latin1"), key]));
    for (const key of evaluated) {
      const k = key.toString("latin1");
      if (!out.has(k) && !cacheValid(n.cache.get(k), nowMs)) out.set(k, key);
    }
    return [...out.values()];
  }

  /** This poll's reading of k on node i, or (a tracked node that answered) its last one while still valid. */
  private readingOf(i: number, k: string, r: Outcome<Map<string, Reading>>, full: boolean): Reading | undefined {
    if (!r.ok) return undefined;
    const fresh = r.value.get(k);
    if (fresh || full || !this.tracking) return fresh;
    const cached = this.nodes[i]!.cache.get(k);
    return cacheValid(cached, this.now()) ? cached : undefined;
  }

  /** Track mode: keeps each node's fresh readings and schedules a re-read at each lease end. */
  private keepReadings(n: NodeState, fresh: ReadonlyMap<string, Reading>): void {
    if (!this.tracking) return;
    for (const [k, reading] of fresh) {
      if (!this.known.has(k)) continue;
      n.cache.set(k, reading);
      const end = leaseEnd(reading);
      if (end !== null) this.deadlines.push(end, k);
    }
    if (this.deadlines.size > 2 * this.known.size * this.nodes.length + 1000) {
      this.deadlines.compact((at, k) => this.nodes.some((x) => leaseEnd(x.cache.get(k)) === at));
    }
  }

  /** Resources whose lease ended on some node by now (popped from the heap; stale entries skipped). */
  private dueKeys(): Buffer[] {
    const out = new Map<string, Buffer>();
    for (const { atMs, key: k } of this.deadlines.popDue(this.now())) {
      const key = this.known.get(k);
      if (key && this.nodes.some((n) => leaseEnd(n.cache.get(k)) === atMs)) out.set(k, key);
    }
    return [...out.values()];
  }

  /**
   * The safety sweep's share for this poll: known resources in turn, each about once per sweepMs (a fractional
   * credit, so a large sweepMs reads nothing for many polls rather than one key every poll).
   */
  private sweepSlice(): Buffer[] {
    const now = this.now();
    const last = this.lastSweepMs ?? now;
    this.lastSweepMs = now;
    this.sweepCredit += (this.known.size * Math.max(0, now - last)) / (this.opts.sweepMs ?? 60_000);
    const share = Math.min(this.known.size, Math.floor(this.sweepCredit));
    this.sweepCredit -= share;
    const out: Buffer[] = [];
    while (out.length < share) {
      this.sweepIter ??= this.known.values();
      const next = this.sweepIter.next();
      if (next.done) {
        this.sweepIter = null;
        continue;
      }
      out.push(next.value);
    }
    return out;
  }

  /**
   * Announced keys (from any node's invalidations): each re-read on every node now, between polls. New ones under
   * the lock patterns (BCAST prefixes) are admitted like SCAN finds.
   */
  private refreshAnnounced(keys: readonly Buffer[]): Promise<TrackerOutput> {
    return this.serial(async () => {
      const found = new Map<string, Buffer>();
      for (const key of keys) {
        const k = key.toString("latin1");
        if (!this.known.has(k) && this.matches(k)) found.set(k, key);
      }
      this.admit(found, false);
      const wanted = keys.filter((key) => this.known.has(key.toString("latin1")));
      return this.refreshKeys(wanted, "notification");
    });
  }

  /** The lease-end timer's work: resources whose lease ended on some node, re-read on every node. */
  private refreshDue(): Promise<TrackerOutput> {
    return this.serial(() => this.refreshKeys(this.dueKeys(), "lease-end"));
  }

  /**
   * Re-reads some resources on every node (each under its deadline, busy nodes skipped) and evaluates them. Node
   * health is the last poll's: a node that does not answer here is left out of these keys' views, as in a poll.
   */
  private async refreshKeys(keys: Buffer[], observedBy: "notification" | "lease-end"): Promise<TrackerOutput> {
    const none: TrackerOutput = { events: [], upserts: [], removed: [] };
    if (keys.length === 0 || this.closed) return none;
    const startedMs = this.now();
    const readings = await Promise.all(this.nodes.map((n) => this.withDeadline(n, (port) => this.read(n, port, keys))));
    readings.forEach((r, i) => {
      if (r.ok) this.keepReadings(this.nodes[i]!, r.value);
      else {
        // Not read there now: the next poll reads these keys on every node again (the view left it out).
        for (const key of keys) {
          this.nodes[i]!.cache.delete(key.toString("latin1"));
          this.dirty.set(key.toString("latin1"), key);
        }
      }
    });
    const out: TrackerOutput = { events: [], upserts: [], removed: [] };
    const nowMs = this.now();
    for (const key of keys) {
      const k = key.toString("latin1");
      if (this.leftToRelease(k, key, startedMs)) continue;
      if (!this.known.has(k)) continue;
      const reads = readings.map((r): Outcome<KeyRead> => {
        if (!r.ok) return r;
        const reading = r.value.get(k);
        return reading ? { ok: true, value: reading } : { ok: false, timedOut: false, error: "not read" };
      });
      const answers = this.releaseAnswers(k, reads, nowMs);
      mergeInto(
        out,
        this.evaluateKey(
          key,
          answers,
          reads.map((r) => (r.ok ? r.value.sample : undefined)),
          nowMs,
          { observedBy },
        ),
      );
    }
    this.armDeadlineTimer();
    return this.upserts.filter(out);
  }

  /** One timer for the earliest lease end on any node (track mode with a push target only). */
  private armDeadlineTimer(): void {
    const push = this.opts.push;
    if (!push || !this.tracking || this.closed) return;
    const next = this.deadlines.peek();
    if (next === null || next >= this.deadlineTimerAt) return;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimerAt = next;
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = null;
        this.deadlineTimerAt = Infinity;
        void this.refreshDue()
          .then((out) => push(out))
          .catch(() => undefined)
          .finally(() => this.armDeadlineTimer());
      },
      Math.max(0, next - this.now()),
    );
    this.deadlineTimer.unref?.();
  }

  private get maxResources(): number {
    return this.opts.maxResources ?? 10_000;
  }

  /** Adds newly found resources up to the limit; returns the ones added. */
  private admit(found: Map<string, Buffer>, resetLimit = true): Buffer[] {
    if (resetLimit) this.limitReached = false;
    const added: Buffer[] = [];
    for (const [k, key] of found) {
      if (this.known.has(k)) continue;
      if (this.known.size >= this.maxResources) {
        this.limitReached = true;
        break;
      }
      this.known.set(k, key);
      added.push(key);
    }
    return added;
  }

  /**
   * Races the node's work against its deadline. The work keeps running after a timeout (a stuck connection answers
   * late or times out in the client), so the node stays `busy` until it settles and gets no new commands meanwhile.
   */
  private async withDeadline<T>(n: NodeState, work: (port: RedlockNodePort) => Promise<T>): Promise<Outcome<T>> {
    if (n.busy) return { ok: false, timedOut: true, error: this.silentReason(n) };
    n.busy = true;
    return this.within(
      n,
      () =>
        work(n.node.port).finally(() => {
          n.busy = false;
        }),
      this.silentReason(n),
    );
  }

  /** The work's result, or a timeout after nodeTimeoutMs reported as `silent`; never throws. */
  private async within<T>(n: NodeState, work: () => Promise<T>, silent: string): Promise<Outcome<T>> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<Outcome<T>>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, timedOut: true, error: silent }), this.opts.nodeTimeoutMs);
    });
    const done = work().then(
      (value): Outcome<T> => ({ ok: true, value }),
      (err: unknown): Outcome<T> => {
        const message = err instanceof Error ? err.message : String(err);
        // The client's own command timeout is the same stall seen from the other side.
        if (/timed out/i.test(message)) return { ok: false, timedOut: true, error: silent };
        return { ok: false, timedOut: false, error: n.connectionError ?? message };
      },
    );
    try {
      return await Promise.race([done, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private silentReason(n: NodeState): string {
    const frozen = n.misses + 1 >= (this.opts.downAfterMisses ?? 3);
    return `no answer within ${this.opts.nodeTimeoutMs} ms${frozen ? " (frozen or overloaded)" : ""}`;
  }

  /** TIME, then SCAN steps within the budget; keys outside the patterns are kept when their value is a token. */
  private async discover(n: NodeState, port: RedlockNodePort): Promise<Discovery> {
    const t0 = this.clock();
    const reply = await port.time().catch((err: unknown) => {
      // Managed Redis services may rename or forbid TIME: the node still votes, only its clock is unknown.
      if (err instanceof Error && /unknown command|NOPERM|no permissions/i.test(err.message)) return null;
      throw err;
    });
    const t1 = this.clock();
    const serverMs = parseTimeReply(reply);
    let offset = serverMs === null ? null : estimateOffset({ serverMs, sentAtMs: t0, receivedAtMs: t1 });
    const injected = this.opts.clockOffsetMs?.[n.node.id];
    if (offset && injected !== undefined) offset = { ...offset, offsetMs: offset.offsetMs + injected };

    const count = this.opts.scanCount ?? 1000;
    const budget = this.opts.scanBudgetPerPoll ?? 10_000;
    // Discovery may use a third of the deadline; the reads of known resources matter more than finding new ones.
    const stopAt = t0 + this.opts.nodeTimeoutMs / 3;
    let cursor = n.cursor;
    let visited = 0;
    const found: Buffer[] = [];
    const byValue: Buffer[] = [];
    // Paced by the node's server-time budget: no step while lockscope's recent commands there cost more than allowed.
    while (n.budget.allows() && visited < budget && this.clock() < stopAt) {
      const step = await n.budget.measure(() => port.scan(cursor, count));
      cursor = step.cursor;
      visited += count;
      for (const key of step.keys) {
        const k = key.toString("latin1");
        if (this.known.has(k)) continue;
        if (this.matches(k)) found.push(key);
        else if (this.opts.discoverByValue !== false) byValue.push(key);
      }
      if (cursor === "0") break;
    }
    for (let i = 0; i < byValue.length && this.clock() < stopAt; i += SAMPLE_BATCH) {
      const batch = byValue.slice(i, i + SAMPLE_BATCH);
      const samples = await n.budget.measure(() =>
        port.sample(
          batch,
          batch.map(() => "string"),
          33,
        ),
      );
      for (const s of samples) {
        if (s.string && s.string.length === 32 && NODE_REDLOCK_TOKEN.test(s.string.prefix.toString("latin1")))
          found.push(s.key);
      }
    }
    return { latencyMs: t1 - t0, offset, cursor, found };
  }

  private async read(n: NodeState, port: RedlockNodePort, keys: Buffer[]): Promise<Map<string, Reading>> {
    const out = new Map<string, Reading>();
    for (let i = 0; i < keys.length; i += SAMPLE_BATCH) {
      const batch = keys.slice(i, i + SAMPLE_BATCH);
      // Reads always run (a lease that ended must be seen); their cost is charged, so SCAN waits after them.
      const samples = await n.budget.measure(() =>
        port.sample(
          batch,
          batch.map((k) => n.types.get(k.toString("latin1"))),
          VALUE_BYTES,
        ),
      );
      const readAtMs = this.now();
      samples.forEach((s, j) => out.set(batch[j]!.toString("latin1"), { sample: s, readAtMs }));
    }
    return out;
  }

  /** Updates the node's health from this poll and returns the facts every resource's answer shares. */
  private settleNode(n: NodeState, d: Outcome<Discovery>, r: Outcome<Map<string, Reading>>): Answer {
    const before = `${n.health.state}|${n.health.error ?? ""}`;
    const failed = !d.ok ? d : !r.ok ? r : null;
    if (failed) {
      n.misses++;
      const down = !failed.timedOut || n.misses >= (this.opts.downAfterMisses ?? 3);
      n.health = { ...n.health, state: down ? "down" : "slow", error: failed.error, missedPolls: n.misses };
    } else if (d.ok) {
      n.misses = 0;
      const h: RedlockNodeHealth = {
        node: n.node.id,
        state: d.value.latencyMs > this.slowMs ? "slow" : "up",
        latencyMs: Math.round(d.value.latencyMs * 10) / 10,
        lastAnswerAt: new Date(this.now()).toISOString(),
        missedPolls: 0,
      };
      if (d.value.offset) h.clockOffsetMs = Math.round(d.value.offset.offsetMs * 10) / 10;
      n.health = h;
    }
    const after = `${n.health.state}|${n.health.error ?? ""}`;
    if (before !== after && (this.polled || n.health.state !== "up")) {
      this.opts.log?.(
        `redlock ${this.opts.group}: node ${n.node.id} ${n.health.state}${n.health.error ? `: ${n.health.error}` : ""}`,
      );
    }
    const a: Answer = {
      node: n.node.id,
      state: n.health.state,
      answered: failed === null,
    };
    if (failed === null && d.ok) {
      a.latencyMs = d.value.latencyMs;
      if (d.value.offset) {
        a.clockOffsetMs = d.value.offset.offsetMs;
        a.clockUncertaintyMs = d.value.offset.uncertaintyMs;
      }
    }
    if (n.health.error) a.error = n.health.error;
    return a;
  }

  private evaluate(
    keys: Buffer[],
    readingOf: (node: number, k: string) => Reading | undefined,
    shared: readonly Answer[],
  ): TrackerOutput {
    const nowMs = this.now();
    this.answering = shared.filter((a) => a.answered).length;
    this.skew = groupSkew(
      shared
        .filter((a) => a.answered && a.clockOffsetMs !== undefined)
        .map((a) => ({ node: a.node, offsetMs: a.clockOffsetMs!, uncertaintyMs: a.clockUncertaintyMs ?? 0 })),
    );
    const out: TrackerOutput = { events: [], upserts: [], removed: [] };
    for (const key of keys) {
      const k = key.toString("latin1");
      // Read before (or while) a force-release that finished meanwhile: the release reports what it changed.
      if (this.leftToRelease(k, key, this.pollStartedMs)) continue;
      const samples: Array<KeySample | undefined> = [];
      const answers = shared.map((base, i) => {
        const reading = shared[i]!.answered ? readingOf(i, k) : undefined;
        samples.push(reading?.sample);
        return this.answerFor(i, k, base, reading, nowMs);
      });
      mergeInto(out, this.evaluateKey(key, answers, samples, nowMs));
    }
    return out;
  }

  /** One node's vote on one key; also remembers the key's type there, so the next read needs no TYPE. */
  private answerFor(i: number, k: string, base: Answer, reading: Reading | undefined, nowMs: number): NodeAnswer {
    if (!base.answered || !reading)
      return { ...base, answered: false, present: false, token: null, pttlMs: null, readAtMs: nowMs };
    const s = reading.sample;
    if (s.type !== "none") this.nodes[i]!.types.set(k, s.type);
    else this.nodes[i]!.types.delete(k);
    const token = tokenOf(s);
    const present = token !== null && s.pttl !== -2;
    return { ...base, present, token, pttlMs: present && s.pttl >= 0 ? s.pttl : null, readAtMs: reading.readAtMs };
  }

  /** The quorum view of one key from the nodes' answers, through the tracker: events, upsert or removal. */
  private evaluateKey(
    key: Buffer,
    answers: readonly NodeAnswer[],
    samples: ReadonlyArray<KeySample | undefined>,
    nowMs: number,
    detail: Record<string, string | number | boolean> = {},
  ): TrackerOutput {
    const k = key.toString("latin1");
    const id = lockId("redlock", this.opts.group, key);
    const answered = answers.filter((a) => a.answered).length;
    if (!answers.some((a) => a.present)) {
      // Nothing known this poll: keep the last view rather than guess.
      if (answered === 0) return { events: [], upserts: [], removed: [] };
      if (answered >= this.needed || !this.tracker.has(id)) {
        // A majority confirms absence (no token can have a quorum), or it was never shown: the resource is gone.
        this.forget(k);
        this.keysById.delete(id);
        return this.tracker.apply([], [{ id, atMs: nowMs }], detail);
      }
    }
    this.keysById.set(id, key);
    const mem = this.memory.get(k) ?? { prior: null, leases: new Map(), owner: null };
    const q = evaluateQuorum({
      group: this.opts.group,
      nowMs,
      answers,
      prior: mem.prior,
      previousToken: mem.owner,
      knownLeaseMs: mem.leases,
    });
    this.remember(k, mem, q);
    const lock = this.observe(id, key, q, answers, samples, nowMs);
    return this.tracker.apply([{ lock, observedAtMs: nowMs }], [], {
      quorumState: q.view.state,
      votes: q.view.votes,
      nodes: q.view.nodes,
      ...detail,
    });
  }

  private forget(k: string): void {
    this.known.delete(k);
    this.memory.delete(k);
    for (const n of this.nodes) {
      n.types.delete(k);
      n.cache.delete(k);
    }
  }

  private remember(k: string, mem: Memory, q: QuorumResult): void {
    const leases = new Map<string, number>();
    if (q.token !== null && q.leaseMs !== null) leases.set(q.token, q.leaseMs);
    const prior =
      q.token !== null && q.view.votes >= q.view.needed ? { token: q.token, validUntilMs: q.validUntilMs } : mem.prior;
    this.memory.set(k, { prior, leases, owner: q.token });
  }

  private observe(
    id: string,
    key: Buffer,
    q: QuorumResult,
    answers: readonly NodeAnswer[],
    samples: ReadonlyArray<KeySample | undefined>,
    nowMs: number,
  ): ObservedLock {
    const i = answers.findIndex((a) => a.present && a.token === q.token);
    const sample = i >= 0 ? samples[i] : undefined;
    const { library, rule } = recogniseToken(sample);
    return {
      id,
      backend: "redlock",
      source: this.opts.group,
      resource: escapeBytes(key, 512),
      owner: q.token,
      ...(sample && tokenFingerprint(sample) ? { ownerFingerprint: tokenFingerprint(sample)! } : {}),
      library,
      rule,
      ttlMs: q.ttlMs,
      holder: null,
      waiters: [],
      observedAt: new Date(nowMs).toISOString(),
      kind: sample?.type ?? "string",
      valuePreview: sample ? previewSample(sample) : null,
      hazards: q.hazards,
      agentId: this.opts.agentId,
      quorum: q.view,
    };
  }
}

/** A node's vote: a string's value, or a hash's first field (Redisson's RedLock puts one RLock hash per node). */
function tokenOf(s: KeySample): string | null {
  if (s.string) return escapeBytes(s.string.prefix, TOKEN_CHARS, s.string.length);
  if (s.hash) {
    const first = s.hash.fields[0];
    return first ? escapeBytes(first[0], TOKEN_CHARS) : null;
  }
  return null;
}

/**
 * Lock.ownerFingerprint of the winning token: SHA-1 of a string's whole value, or of a hash's holder field. Null
 * for a value longer than was read (its votes are told apart by prefix and length only; not force-releasable).
 */
function tokenFingerprint(s: KeySample): string | null {
  if (s.string) return s.string.prefix.length >= s.string.length ? fingerprintOf(s.string.prefix) : null;
  const field = s.hash?.fields[0]?.[0];
  return field ? fingerprintOf(field) : null;
}

function recogniseToken(sample: KeySample | undefined): { library: string; rule: string } {
  if (sample?.string) {
    const exact = sample.string.length === 32 && NODE_REDLOCK_TOKEN.test(sample.string.prefix.toString("latin1"));
    return exact
      ? { library: "node-redlock", rule: "redlock-32-hex-token" }
      : { library: "generic", rule: "redlock-string-token" };
  }
  const field = sample?.hash?.fields[0]?.[0].toString("latin1");
  if (field !== undefined && REDISSON_FIELD.test(field)) return { library: "redisson", rule: "redlock-redisson-hash" };
  if (field !== undefined) return { library: "generic", rule: "redlock-hash-field" };
  return { library: "generic", rule: "redlock-no-holder" };
}

/** When a reading's lease ends (one millisecond past, as PTTL rounds down), or null for none or no expiry. */
function leaseEnd(r: Reading | undefined): number | null {
  if (!r || r.sample.type === "none" || r.sample.pttl < 0) return null;
  return r.readAtMs + r.sample.pttl + 1;
}

/** A cached reading stays valid while tracked, until its lease ends (then only a direct read may say "gone"). */
function cacheValid(r: Reading | undefined, nowMs: number): boolean {
  if (!r) return false;
  const end = leaseEnd(r);
  return end === null || end > nowMs;
}
