/**
 * One watched PostgreSQL server: each poll runs the one snapshot statement, turns it into locks (pg-locks-model.ts)
 * and tracks them into events. The snapshot is complete (pg_locks is the whole lock table), so a key absent from a
 * successful, untruncated snapshot is really released; a failed or truncated poll never counts as a release.
 */
import type { Hazard, Lock } from "../../../lib/contract/lock";
import type { ReleaseCommand } from "../../../lib/contract/release";
import type { TrackerOutput } from "../../core/tracker";
import { runRelease, type ReleaseAdapter, type ReleaseRun } from "../../release/release-runner";
import { DbLockSource, errorMessage, type DbLockSourceOptions } from "../db-lock-source";
import { buildPgModel, type PgModelMemo } from "./pg-locks-model";
import type { PgPort } from "./pg-port";
import { planPgRelease, type PgReleasePlan } from "./pg-release";
import { parsePgSnapshot, pgPollAsk, type KnownPgLocks } from "./pg-snapshot";

type PgTerminatePlan = Exclude<PgReleasePlan, { kind: "refuse" }>;

/** A release's fresh read: the poll's output, the lock as it now is, and every lock its holder's session holds. */
interface PgReading {
  out: TrackerOutput;
  lock: Lock | undefined;
  sessionLocks: Array<{ locktype: string; mode: string; count: number }>;
}

export type PgSourceOptions = DbLockSourceOptions;

export class PostgresSource extends DbLockSource {
  private firstSeen = new Map<string, number>();
  private ids = new Map<string, string>();
  private memo: PgModelMemo | null = null;
  private heldByPid = new Map<number, string[]>();
  private serverOffsetMs = 0;
  private known: KnownPgLocks | null = null;
  /** Polls so far: each asks again for one bucket and one slice of the sessions in turn (pgPollAsk). */
  private polls = 0;

  constructor(
    private readonly port: PgPort,
    opts: PgSourceOptions,
  ) {
    super("postgres", opts);
  }

  async poll(): Promise<TrackerOutput> {
    const started = this.now();
    const { settings } = this.opts;
    // The server sends a bucket of lock rows only when its signature differs from the agent's, and a session's row
    // only when its hash is not one the agent has (the blockers and the server's clock come every poll): a poll after
    // one lock change sends that lock's bucket, about 1/PG_LOCK_BUCKETS of the rows. Each poll also asks again for one
    // bucket and one slice of the sessions whatever the signatures say, so a change that a hash collision hid is
    // corrected within PG_LOCK_BUCKETS polls; after a failed poll everything is asked for.
    const known = this.known;
    const ask = pgPollAsk(known, this.polls++);
    let snap;
    try {
      // With SHOW_QUERIES=off the server still sends the query text of a session inside a transaction, only to tell a
      // pg_advisory_xact_lock holder; it is sent to the dashboard only with SHOW_QUERIES=on.
      const raw = await this.port.snapshot(
        settings.maxLocks,
        Math.max(200, settings.queryChars),
        ask.signature,
        ask.sessionHashes,
        settings.showQueries,
        ask.bucketSignatures,
        ask.sessionPids,
      );
      snap = parsePgSnapshot(raw, known, ask, settings.maxLocks);
    } catch (err) {
      this.known = null;
      return this.fail(errorMessage(err));
    }
    this.known = {
      signature: snap.signature,
      buckets: snap.buckets,
      sessions: new Map(snap.sessions.map((s) => [s.pid, s])),
    };
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
      memo: this.memo,
    });
    this.firstSeen = model.firstSeen;
    this.ids = model.ids;
    this.memo = model.memo;
    this.heldByPid = model.heldByPid;
    const truncated = snap.total > snap.locks.length;
    const hazards: Hazard[] = truncated
      ? [
          {
            code: "too-many-locks",
            severity: "warning",
            message: `${snap.total} advisory lock rows on the server; the agent reads at most ${settings.maxLocks} (DB_MAX_LOCKS) per poll, so some locks are not shown and none of those counts as released.`,
          },
        ]
      : [];
    return this.track({ locks: model.locks, observedAtMs, startedMs: started, truncated, hazards });
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
        const lock = this.lock(lockId);
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
}
