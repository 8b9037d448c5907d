/**
 * One watched PostgreSQL server: each poll runs the one snapshot statement, turns it into locks (pg-locks-model.ts)
 * and tracks them into events. The snapshot is complete (pg_locks is the whole lock table), so a key absent from a
 * successful, untruncated snapshot is really released; a failed or truncated poll never counts as a release.
 */
import type { Hazard, Lock, SourceStatus } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import { LockTracker, type TrackerOutput } from "../../core/tracker";
import type { DbLockSettings } from "../db-lock-settings";
import type { WatchedSource } from "../source-port";
import { buildPgModel } from "./pg-locks-model";
import type { PgPort } from "./pg-port";
import { planPgRelease } from "./pg-release";
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

  async release(cmd: ReleaseCommand): Promise<{ result: ReleaseResult; output: TrackerOutput }> {
    const lock = this.tracker.locks().find((l) => l.id === cmd.lockId);
    const pid = lock?.database?.holders.length === 1 ? lock.database.holders[0]!.session.pid : null;
    let sessionLocks: Array<{ locktype: string; mode: string; count: number }> = [];
    try {
      if (pid !== null) sessionLocks = await this.port.sessionLocks(pid);
    } catch (err) {
      return { result: errorResult(this.opts.sourceId, err), output: EMPTY };
    }
    const plan = planPgRelease(lock, cmd, {
      heldByPid: this.heldByPid,
      sessionLocks,
      nowMs: this.now() - this.serverOffsetMs,
      showQueries: this.opts.settings.showQueries,
    });
    if (plan.kind === "refuse") return { result: plan.result, output: EMPTY };
    if (cmd.dryRun) {
      return {
        result: {
          outcome: "dry-run",
          message: `would end session pid ${plan.pid}; nothing was ended`,
          plan: plan.steps,
          perNode: [],
        },
        output: EMPTY,
      };
    }
    let answer: { matched: boolean; terminated: boolean };
    try {
      answer = await this.port.terminate(
        plan.pid,
        plan.backendStart,
        Math.floor(this.opts.settings.statementTimeoutMs / 2),
      );
    } catch (err) {
      return { result: { ...errorResult(this.opts.sourceId, err), plan: plan.steps }, output: EMPTY };
    }
    const node = this.opts.sourceId;
    if (!answer.matched) {
      return {
        result: {
          outcome: "refused-owner-changed",
          message: `no session pid ${plan.pid} started at ${plan.backendStart} exists now (it ended, or the pid belongs to a newer session): nothing was ended`,
          plan: plan.steps,
          perNode: [{ node, outcome: "refused-owner-changed" }],
        },
        output: EMPTY,
      };
    }
    // Re-read at once so the view shows the release (and the waiter that now holds) without waiting for the cycle.
    const output = await this.poll();
    const outcome = answer.terminated ? "released" : "error";
    return {
      result: {
        outcome,
        message: answer.terminated
          ? `ended session pid ${plan.pid}: its locks are freed`
          : `asked session pid ${plan.pid} to end, but it had not exited within the wait; check it again`,
        plan: plan.steps,
        perNode: [{ node, outcome }],
      },
      output,
    };
  }

  private fail(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    if (this.up || this.error !== message) this.opts.log(`${this.opts.sourceId}: poll failed: ${message}`);
    this.up = false;
    this.error = message.slice(0, 500);
  }
}

function errorResult(node: string, err: unknown): ReleaseResult {
  const message = err instanceof Error ? err.message : String(err);
  return { outcome: "error", message: `${node}: ${message}`, plan: [], perNode: [{ node, outcome: "error" }] };
}
