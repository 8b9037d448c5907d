/**
 * One watched PostgreSQL server: each poll runs the one snapshot statement, turns it into locks (pg-locks-model.ts)
 * and tracks them into events. The snapshot is complete (pg_locks is the whole lock table), so a key absent from a
 * successful, untruncated snapshot is really released; a failed or truncated poll never counts as a release.
 */
import type { Hazard, Lock, SourceStatus } from "../../../lib/contract/lock";
import type { ReleaseCommand } from "../../../lib/contract/release";
import { LockTracker, type TrackerOutput } from "../../core/tracker";
import type { DbLockSettings } from "../db-lock-settings";
import type { WatchedSource } from "../source-port";
import { buildPgModel } from "./pg-locks-model";
import type { PgPort } from "./pg-port";
import { runRelease, type ReleaseAdapter, type ReleaseRun } from "../../release/release-runner";
import { planPgRelease, type PgReleasePlan } from "./pg-release";

type PgTerminatePlan = Exclude<PgReleasePlan, { kind: "refuse" }>;

/** A release's fresh read: the poll's output, the lock as it now is, and every lock its holder's session holds. */
interface PgReading {
  out: TrackerOutput;
  lock: Lock | undefined;
  sessionLocks: Array<{ locktype: string; mode: string; count: number }>;
}
import { parsePgSnapshot } from "./pg-snapshot";

export interface PgSourceOptions {
  sourceId: string;
  agentId: string;
  newId: () => string;
  log: (line: string) => void;
  settings: DbLockSettings;
  hazardMemoryMs?: number;
  now?: () => number;
}

const EMPTY: TrackerOutput = { events: [], upserts: [], removed: [] };

export class PostgresSource implements WatchedSource {
  private readonly tracker: LockTracker;
  private firstSeen = new Map<string, number>();
  private ids = new Map<string, string>();
  private heldByPid = new Map<number, string[]>();
  private serverOffsetMs = 0;
  private up = false;
  private error: string | undefined = "not polled yet";
  private lastScanAt: string | undefined;
  private lastScanMs: number | undefined;
  private hazards: Hazard[] = [];
  private readonly now: () => number;

  constructor(
    private readonly port: PgPort,
    private readonly opts: PgSourceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.tracker = new LockTracker({
      agentId: opts.agentId,
      newId: opts.newId,
      history: { maxHoldMs: opts.settings.thresholds.maxHoldMs, rememberMs: opts.hazardMemoryMs ?? 5 * 60_000 },
    });
  }

  status(): SourceStatus {
    const s: SourceStatus = {
      id: this.opts.sourceId,
      kind: "postgres",
      up: this.up,
      locks: this.tracker.size,
      agentId: this.opts.agentId,
    };
    if (this.error) s.error = this.error;
    if (this.lastScanAt) s.lastScanAt = this.lastScanAt;
    if (this.lastScanMs !== undefined) s.lastScanMs = this.lastScanMs;
    if (this.hazards.length > 0) s.hazards = this.hazards;
    return s;
  }

  locks(): Lock[] {
    return this.tracker.locks();
  }

  has(lockId: string): boolean {
    return this.tracker.has(lockId);
  }

  async poll(): Promise<TrackerOutput> {
    const started = this.now();
    const { settings } = this.opts;
    let raw: unknown;
    try {
      // Query text is read even with SHOW_QUERIES=off, only to tell a pg_advisory_xact_lock holder; it is sent to the
      // dashboard only with SHOW_QUERIES=on.
      raw = await this.port.snapshot(settings.maxLocks, Math.max(200, settings.queryChars));
    } catch (err) {
      this.fail(err);
      return EMPTY;
    }
    let snap;
    try {
      snap = parsePgSnapshot(raw);
    } catch (err) {
      this.fail(err);
      return EMPTY;
    }
    const observedAtMs = this.now();
    this.serverOffsetMs = observedAtMs - Date.parse(snap.now);
    const model = buildPgModel(snap, {
      sourceId: this.opts.sourceId,
      agentId: this.opts.agentId,
      showQueries: settings.showQueries,
      queryChars: settings.queryChars,
      thresholds: settings.thresholds,
      firstSeen: this.firstSeen,
      observedAtMs,
      ids: this.ids,
    });
    this.firstSeen = model.firstSeen;
    this.ids = model.ids;
    this.heldByPid = model.heldByPid;
    const truncated = snap.total > snap.locks.length;
    this.hazards = truncated
      ? [
          {
            code: "too-many-locks",
            severity: "warning",
            message: `${snap.total} advisory lock rows on the server; the agent reads at most ${settings.maxLocks} (DB_MAX_LOCKS) per poll, so some locks are not shown and none of those counts as released.`,
          },
        ]
      : [];
    const present = new Set(model.locks.map((l) => l.id));
    const gone = truncated
      ? []
      : this.tracker
          .locks()
          .filter((l) => !present.has(l.id))
          .map((l) => ({ id: l.id, atMs: observedAtMs }));
    const out = this.tracker.apply(
      model.locks.map((lock) => ({ lock, observedAtMs })),
      gone,
      { via: "poll" },
    );
    if (!this.up && this.error !== "not polled yet") this.opts.log(`${this.opts.sourceId}: polling again`);
    this.up = true;
    this.error = undefined;
    this.lastScanAt = new Date(observedAtMs).toISOString();
    this.lastScanMs = observedAtMs - started;
    return out;
  }

  /**
   * Force-release through the one release runner: a fresh poll (the lock as it is now, published as seen), the
   * plan from it, then one statement that ends the session only while its pid still has the backend_start seen.
   */
  async release(cmd: ReleaseCommand): Promise<ReleaseRun> {
    return runRelease(this.releaseAdapter(cmd.lockId), cmd);
  }

  private releaseAdapter(lockId: string): ReleaseAdapter<PgReading, PgTerminatePlan> {
    const node = this.opts.sourceId;
    return {
      where: node,
      read: async () => {
        const out = await this.poll();
        const lock = this.tracker.locks().find((l) => l.id === lockId);
        const pid = lock?.database?.holders.length === 1 ? lock.database.holders[0]!.session.pid : null;
        const sessionLocks = pid !== null ? await this.port.sessionLocks(pid) : [];
        return { out, lock, sessionLocks };
      },
      seen: (r) => r.out,
      fingerprint: (r) => r.lock?.ownerFingerprint ?? null,
      decide: (r, cmd) => {
        const plan = planPgRelease(r.lock, cmd, {
          heldByPid: this.heldByPid,
          sessionLocks: r.sessionLocks,
          nowMs: this.now() - this.serverOffsetMs,
          showQueries: this.opts.settings.showQueries,
        });
        if (plan.kind === "refuse")
          return { kind: "stop", outcome: plan.result.outcome, message: plan.result.message, perNode: [] };
        return { kind: "go", plan, steps: plan.steps };
      },
      dryRun: (_r, plan) => ({ message: `would end session pid ${plan.pid}; nothing was ended`, perNode: [] }),
      write: async (_r, plan) => {
        const answer = await this.port.terminate(
          plan.pid,
          plan.backendStart,
          Math.floor(this.opts.settings.statementTimeoutMs / 2),
        );
        if (!answer.matched) return [{ node, outcome: "refused-owner-changed" }];
        return [{ node, outcome: answer.terminated ? "released" : "error" }];
      },
      // Re-read at once so the view shows the release (and the waiter that now holds) without waiting for the cycle.
      settle: (perNode) => (perNode[0]?.outcome === "refused-owner-changed" ? Promise.resolve(null) : this.poll()),
      summarise: (perNode, plan) => {
        const outcome = perNode[0]!.outcome;
        if (outcome === "refused-owner-changed")
          return {
            outcome,
            message: `no session pid ${plan.pid} started at ${plan.backendStart} exists now (it ended, or the pid belongs to a newer session): nothing was ended`,
          };
        return outcome === "released"
          ? { outcome, message: `ended session pid ${plan.pid}: its locks are freed` }
          : {
              outcome,
              message: `asked session pid ${plan.pid} to end, but it had not exited within the wait; check it again`,
            };
      },
    };
  }

  private fail(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    if (this.up || this.error !== message) this.opts.log(`${this.opts.sourceId}: poll failed: ${message}`);
    this.up = false;
    this.error = message.slice(0, 500);
  }
}
