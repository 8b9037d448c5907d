/**
 * Force-release of a MySQL/MariaDB user-level lock: only its connection can RELEASE_LOCK it, so lockscope ends the
 * connection (KILL CONNECTION), which also rolls back its open transaction and frees its other locks.
 *
 * How close to atomic: KILL cannot be made conditional, so just before it the source checks, in one statement,
 * that IS_USED_LOCK(name) is still that connection id and that the connection still has the user and host the
 * operator saw. Connection ids are never reused while the server runs (a counter), so the KILL can only reach the
 * session the operator chose; the one race left is that session releasing the lock in the milliseconds between the
 * check and the KILL, in which case a session that no longer holds it is ended.
 */
import type { Lock } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../../lib/contract/release";
import { parseMysqlOwner } from "./mysql-locks-model";

export type MysqlReleasePlan =
  { kind: "kill"; id: number; user: string; host: string; steps: string[] } | { kind: "refuse"; result: ReleaseResult };

const refuse = (outcome: ReleaseResult["outcome"], message: string): MysqlReleasePlan => ({
  kind: "refuse",
  result: { outcome, message, plan: [], perNode: [] },
});

export function planMysqlRelease(
  lock: Lock | undefined,
  cmd: ReleaseCommand,
  ctx: { heldById: ReadonlyMap<number, readonly string[]>; showQueries: boolean; nowMs: number },
): MysqlReleasePlan {
  if (!lock || !lock.database) return refuse("nothing-to-do", "the lock is not held any more: nothing to end");
  if (cmd.purgeWaiter !== undefined) return refuse("refused", "MySQL waiters are connections: nothing to purge");
  const h = lock.database.holders[0];
  if (!h) return refuse("nothing-to-do", "nobody holds the lock now: nothing to end");
  const expected = parseMysqlOwner(cmd.expectedOwner);
  if (!expected) return refuse("rejected", "expectedOwner must be the holder as shown: connection <id> (user@host)");
  if (lock.owner !== cmd.expectedOwner) {
    return refuse("refused-owner-changed", `the holder is now ${lock.owner ?? "nobody"}: nothing was ended`);
  }
  if (cmd.expectedFingerprint !== undefined && cmd.expectedFingerprint !== lock.ownerFingerprint) {
    return refuse("refused-owner-changed", "the exact holding changed since you looked: nothing was ended");
  }
  const s = h.session;
  const idle = s.stateChange ? `${Math.round((ctx.nowMs - Date.parse(s.stateChange)) / 1000)} s` : "unknown";
  const others = (ctx.heldById.get(expected.id) ?? []).filter((r) => r !== lock.resource);
  return {
    kind: "kill",
    id: expected.id,
    user: expected.user,
    host: expected.host,
    steps: [
      `End connection ${expected.id}: user ${expected.user}, client ${expected.host}, database ${s.database ?? "(none)"}, state ${s.state ?? "?"} for ${idle}.`,
      ctx.showQueries
        ? `Its current statement: ${s.query ?? "(none)"}`
        : "Its statement text is not shown (the agent runs with SHOW_QUERIES=off).",
      `Just before: check that IS_USED_LOCK(${lock.resource}) is still ${expected.id} and that connection ${expected.id} is still ${expected.user}@${expected.host}; then KILL CONNECTION ${expected.id}. Connection ids are not reused while the server runs.`,
      "Its open transaction, if any, is rolled back, and every lock it holds is freed; its client sees the connection closed.",
      others.length > 0
        ? `Other user-level locks it holds (freed too): ${others.slice(0, 20).join(", ")}${others.length > 20 ? ` and ${others.length - 20} more` : ""}.`
        : "It holds no other user-level lock.",
    ],
  };
}
