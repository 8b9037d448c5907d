/**
 * One watched MySQL or MariaDB server: each poll reads every user-level lock (GET_LOCK) with one statement and
 * tracks them into events. The lock table is read whole, so a lock absent from a successful, untruncated read is
 * really released; a failed or truncated read never counts as a release.
 */
import type { Hazard, Lock } from "../../../lib/contract/lock";
import type { ReleaseCommand } from "../../../lib/contract/release";
import { escapeText } from "../../core/escape";
import type { TrackerOutput } from "../../core/tracker";
import { runRelease, type ReleaseAdapter, type ReleaseRun } from "../../release/release-runner";
import { DbLockSource, type DbLockSourceOptions } from "../db-lock-source";
import { buildMysqlModel, parseMysqlRows, type MysqlFlavour, type MysqlLockTable } from "./mysql-locks-model";
import type { MysqlPort } from "./mysql-port";
import { planMysqlRelease, type MysqlReleasePlan } from "./mysql-release";

type MysqlKillPlan = Exclude<MysqlReleasePlan, { kind: "refuse" }>;

/** A release's fresh read: the poll's output and the lock as it now is. */
interface MysqlReading {
  out: TrackerOutput;
  lock: Lock | undefined;
}

export type MysqlSourceOptions = DbLockSourceOptions;

/** The server's own error for a missing information table, turned into what an administrator must run. */
export function explainMysqlError(flavour: MysqlFlavour | null, err: unknown): string {
  const e = err as { errno?: number; message?: string };
  if (flavour === "mariadb" && e.errno === 1109 && /METADATA_LOCK_INFO/i.test(e.message ?? "")) {
    return "information_schema.METADATA_LOCK_INFO is missing: run INSTALL SONAME 'metadata_lock_info'; on this MariaDB server as an administrator (once), so its GET_LOCK locks can be listed (or start it with performance_schema=ON and performance_schema_instrument='wait/lock/metadata/sql/mdl=ON')";
  }
  if (e.errno === 1142 || e.errno === 1227) {
    return `${e.message ?? "access denied"} (grant PROCESS, and on MySQL 8 SELECT on performance_schema: see the README)`;
  }
  return e.message ?? String(err);
}

export class MysqlSource extends DbLockSource {
  private flavour: MysqlFlavour | null = null;
  private table: MysqlLockTable | null = null;
  private firstSeen = new Map<string, number>();
  private names = new Map<string, Buffer>();
  private heldById = new Map<number, string[]>();

  constructor(
    private readonly port: MysqlPort,
    opts: MysqlSourceOptions,
  ) {
    super("mysql", opts);
  }

  async poll(): Promise<TrackerOutput> {
    const started = this.now();
    const { settings } = this.opts;
    let rows;
    try {
      this.flavour ??= await this.port.flavour();
      this.table ??= await this.port.lockTable(this.flavour);
      // One row more than the limit tells a full read from a truncated one.
      rows = parseMysqlRows(await this.port.userLocks(this.table, settings.queryChars, settings.maxLocks + 1));
    } catch (err) {
      // Asked again next poll: an administrator may have installed the plugin or changed the server meanwhile.
      this.table = null;
      return this.fail(explainMysqlError(this.flavour, err));
    }
    const table = this.table;
    const truncated = rows.length > settings.maxLocks;
    if (truncated) rows = rows.slice(0, settings.maxLocks);
    const observedAtMs = this.now();
    const model = buildMysqlModel(rows, {
      sourceId: this.opts.sourceId,
      agentId: this.opts.agentId,
      flavour: this.flavour,
      lockTable: table,
      showQueries: settings.showQueries,
      queryChars: settings.queryChars,
      thresholds: settings.thresholds,
      observedAtMs,
      firstSeen: this.firstSeen,
    });
    this.firstSeen = model.firstSeen;
    this.names = model.names;
    this.heldById = model.heldById;
    const hazards: Hazard[] = [];
    if (truncated) {
      hazards.push({
        code: "too-many-locks",
        severity: "warning",
        message: `More than ${settings.maxLocks} user-lock rows (DB_MAX_LOCKS): some locks are not shown and none of those counts as released.`,
      });
    }
    if (model.unnamedWaiters > 0) {
      hazards.push({
        code: "db-unnamed-waiters",
        severity: "info",
        message: `${model.unnamedWaiters} connection(s) wait in GET_LOCK for a lock whose name their statement does not spell out (a prepared statement or a variable): MariaDB does not say which lock.`,
      });
    }
    return this.track({ locks: model.locks, observedAtMs, startedMs: started, truncated, hazards });
  }

  /**
   * Force-release through the one release runner: a fresh poll, the plan from it, then KILL of the holder's
   * connection only after one statement confirms that IS_USED_LOCK still names it and its user and host are unchanged
   * (connection ids are not reused while the server runs).
   */
  async release(cmd: ReleaseCommand): Promise<ReleaseRun> {
    return runRelease(this.releaseAdapter(cmd.lockId), cmd);
  }

  private releaseAdapter(lockId: string): ReleaseAdapter<MysqlReading, MysqlKillPlan> {
    const node = this.opts.sourceId;
    return {
      where: node,
      read: async () => {
        const out = await this.poll();
        return { out, lock: this.lock(lockId) };
      },
      seen: (r) => r.out,
      fingerprint: (r) => r.lock?.ownerFingerprint ?? null,
      decide: (r, cmd) => {
        const plan = planMysqlRelease(r.lock, cmd, {
          heldById: this.heldById,
          showQueries: this.opts.settings.showQueries,
          nowMs: this.now(),
        });
        if (plan.kind === "refuse")
          return { kind: "stop", outcome: plan.result.outcome, message: plan.result.message, perNode: [] };
        return { kind: "go", plan, steps: plan.steps };
      },
      dryRun: (_r, plan) => ({ message: `would end connection ${plan.id}; nothing was ended`, perNode: [] }),
      write: async (_r, plan) => {
        const name = this.names.get(lockId);
        const check = name && this.table ? await this.port.holderCheck(this.table, name, plan.id) : null;
        const sameHolder = check !== null && check.usedBy === plan.id;
        const sameConnection =
          check !== null &&
          escapeText(check.user ?? "?", 64) === plan.user &&
          escapeText(check.host ?? "?", 80) === plan.host;
        if (!sameHolder || !sameConnection) {
          const why = !check
            ? "the lock's exact name is not known to the agent: nothing was ended"
            : !sameHolder
              ? `IS_USED_LOCK says the holder is now ${check.usedBy ?? "nobody"}, not connection ${plan.id} (or the server's lock table shows the name only in part): nothing was ended`
              : `connection ${plan.id} is now ${check.user ?? "?"}@${check.host ?? "?"}, not the one you saw: nothing was ended`;
          return [{ node, outcome: "refused-owner-changed", detail: why }];
        }
        await this.port.kill(plan.id);
        return [{ node, outcome: "released" }];
      },
      settle: (perNode) => (perNode[0]?.outcome === "released" ? this.poll() : Promise.resolve(null)),
      summarise: (perNode, plan) =>
        perNode[0]!.outcome === "released"
          ? { outcome: "released", message: `ended connection ${plan.id}: its locks are freed` }
          : {
              outcome: "refused-owner-changed",
              message: perNode[0]!.detail ?? "the holder changed: nothing was ended",
            },
    };
  }
}
