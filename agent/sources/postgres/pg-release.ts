/**
 * Force-release of a PostgreSQL advisory lock. Another session's advisory lock can only be freed by ending that
 * session, which also rolls back its open transaction and frees everything else it holds, so the plan names all of
 * it. Pure: the source reads and terminates.
 */
import type { Lock } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import { duration } from "../db-lock-settings";
import { parsePgOwner } from "./pg-locks-model";

export type PgReleasePlan =
  { kind: "terminate"; pid: number; backendStart: string; steps: string[] } | { kind: "refuse"; result: ReleaseResult };

const refuse = (outcome: ReleaseResult["outcome"], message: string): PgReleasePlan => ({
  kind: "refuse",
  result: { outcome, message, plan: [], perNode: [] },
});

export function planPgRelease(
  lock: Lock | undefined,
  cmd: ReleaseCommand,
  ctx: {
    /** Other advisory locks of this source, by holder pid (resources). */
    heldByPid: ReadonlyMap<number, readonly string[]>;
    /** Every lock the session holds now, from pg_locks (by type and mode). */
    sessionLocks: ReadonlyArray<{ locktype: string; mode: string; count: number }>;
    /** The server's time now, epoch ms. */
    nowMs: number;
    showQueries: boolean;
  },
): PgReleasePlan {
  if (!lock || !lock.database) return refuse("nothing-to-do", "the lock is not held any more: nothing to end");
  if (cmd.purgeWaiter !== undefined) return refuse("refused", "PostgreSQL waiters are sessions: nothing to purge");
  const holders = lock.database.holders;
  if (holders.length === 0) return refuse("nothing-to-do", "nobody holds the lock now (only waiters): nothing to end");
  if (holders.length > 1) {
    return refuse(
      "refused",
      `a shared lock held by ${holders.length} sessions: lockscope ends one session at a time, from a lock it holds alone`,
    );
  }
  const expected = parsePgOwner(cmd.expectedOwner);
  if (!expected) return refuse("rejected", "expectedOwner must be the holder as shown: pid <n>@<backend start>");
  if (lock.owner !== cmd.expectedOwner) {
    return refuse("refused-owner-changed", `the holder is now ${lock.owner ?? "nobody"}: nothing was ended`);
  }
  if (cmd.expectedFingerprint !== undefined && cmd.expectedFingerprint !== lock.ownerFingerprint) {
    return refuse("refused-owner-changed", "the exact holding changed since you looked: nothing was ended");
  }
  const h = holders[0]!;
  const s = h.session;
  const age = (iso: string | null | undefined) => (iso ? `${duration(ctx.nowMs - Date.parse(iso))} ago` : "unknown");
  const others = (ctx.heldByPid.get(s.pid) ?? []).filter((r) => r !== lock.resource);
  const steps = [
    `End session pid ${s.pid} started ${expected.backendStart} (${age(expected.backendStart)}): application ${s.application ? `"${s.application}"` : "(none)"}, user ${s.user ?? "?"}, client ${s.client ?? "?"}, state ${s.state ?? "?"}, transaction started ${age(s.xactStart)}, query started ${age(s.queryStart)}.`,
    ctx.showQueries
      ? `Its current or last query: ${s.query ?? "(none)"}`
      : "Its query text is not shown (the agent runs with SHOW_QUERIES=off).",
    `One statement: SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ${s.pid} AND backend_start = '${expected.backendStart}': a pid reused by a newer session has another backend_start and is never ended.`,
    "Its open transaction, if any, is rolled back, and every lock it holds is freed; its client sees its connection closed.",
    others.length > 0
      ? `Other advisory locks it holds (freed too): ${others.slice(0, 20).join(", ")}${others.length > 20 ? ` and ${others.length - 20} more` : ""}.`
      : "It holds no other advisory lock.",
    ctx.sessionLocks.length > 0
      ? `All locks it holds now (pg_locks): ${ctx.sessionLocks.map((l) => `${l.count} ${l.locktype} ${l.mode}`).join(", ")}.`
      : "pg_locks lists no other lock of this session.",
  ];
  return { kind: "terminate", pid: expected.pid, backendStart: expected.backendStart, steps };
}
