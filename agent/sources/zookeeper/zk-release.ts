/**
 * Force-release of a ZooKeeper lock, decided from a fresh read: which node may be deleted, at which version, and
 * what the operator is told will happen. Pure: the source reads, deletes and reports; this decides.
 *
 * Only the holder's contender node is ever deleted, conditioned on its data version, never the lock parent.
 */
import type { Lock } from "../../../lib/contract/lock";
import type { ReleaseCommand, ReleaseOutcome } from "../../../lib/contract/release";
import { escapeText } from "../../core/escape";
import { decideQueue, holderOwner, type ClientWatchTable, type Contender, type LockShape } from "./queue";
import type { ZkStat } from "./zk-port";

const NAME_CHARS = 256;
const ZERO_SESSION = "0x0";

export interface ZkReleaseInput {
  cmd: ReleaseCommand;
  /** The ensemble, as shown (`zookeeper://host:port,...`). */
  sourceId: string;
  /** The lock as this agent last reported it (what the operator acted on); null when it reports it no more. */
  reported: Lock | null;
  /** A fresh read of the lock path; null when no contender is left. */
  shape: LockShape | null;
  /** Fresh Stat of `releaseHolder(shape)`, read just before deciding; null when that node is gone. */
  holderStat: ZkStat | null;
  /** The watch and session table, for whether the holder's session is still connected; null when unknown. */
  table: ClientWatchTable | null;
}

export type ZkReleaseDecision =
  | { kind: "delete"; path: string; version: number; steps: string[] }
  | { kind: "refuse"; outcome: ReleaseOutcome; message: string; path: string | null; steps: string[] };

/** The contender a release would delete: the first holder, whose name is what Lock.owner shows. */
export function releaseHolder(shape: LockShape | null): Contender | null {
  return shape?.contenders.find((c) => c.role === "holder") ?? null;
}

/** The name as the dashboard shows it in Lock.owner. */
export function shownName(c: Pick<Contender, "name">): string {
  return escapeText(c.name, NAME_CHARS);
}

function list(names: readonly string[]): string {
  const shown = names.slice(0, 3).join(", ");
  return names.length > 3 ? `${shown} and ${names.length - 3} more` : shown;
}

/** What happens to the queue once `gone` is deleted, from the recipe's own ordering rules. */
export function afterDelete(shape: LockShape, gone: Contender): string {
  const others = shape.contenders.filter((c) => c.path !== gone.path);
  const stillHolding = others.filter((c) => c.role === "holder");
  if (shape.kind === "simple") return "a client waiting for the node may create it again";
  if (shape.kind === "curator-semaphore-v2" || shape.kind === "kazoo-semaphore") {
    const next = others.find((c) => c.role === "waiter" && c.waitsOnChildren);
    return next
      ? `a lease frees; the first queued acquirer ${shownName(next)} may take it`
      : `a lease frees (${stillHolding.length} other holder${stillHolding.length === 1 ? " keeps its" : "s keep theirs"})`;
  }
  // Re-run the recipe's decision on the queue without the node (copies: the shape stays as read).
  const queue = others.map((c) => ({ ...c }));
  decideQueue(queue, shape.policy, shape.path);
  const before = new Set(stillHolding.map((c) => c.path));
  const promoted = queue.filter((c) => c.role === "holder" && !before.has(c.path)).map(shownName);
  if (promoted.length === 1) return `the next waiter ${promoted[0]} becomes holder`;
  if (promoted.length > 1) return `the next waiters ${list(promoted)} become holders`;
  if (stillHolding.length > 0)
    return `${stillHolding.length} other holder${stillHolding.length === 1 ? " keeps" : "s keep"} holding; no waiter moves up`;
  if (queue.length > 0) return "no waiter can take it yet";
  return "no waiter is queued: the lock becomes free";
}

function sessionStep(session: string, table: ClientWatchTable | null): string {
  const consequence =
    "ZooKeeper lets any client delete another session's ephemeral node, and that is exactly what you ask for here; " +
    "the client is not told and goes on believing it holds the lock until it next looks at its node, so stop or " +
    "fence it as well";
  if (!table?.sessionsComplete)
    return `whether session ${session} is still alive is unknown (no cons answer): if it is, ${consequence}`;
  const host = table.hosts.get(session);
  if (host) return `session ${session} is still connected (from ${escapeText(host, 128)}): ${consequence}`;
  return `session ${session} is not connected to any server: its client is gone or cut off, and the node would otherwise stay until the session expires`;
}

/**
 * Decides a force-release from a fresh read. Refuses unless the holder is still the node the operator saw (same
 * name, same session, same creation time), sits below the lock path (never the parent itself), has no children, and
 * is either ephemeral or the PERSISTENT contender of a recognised lock recipe.
 */
export function decideZkRelease(input: ZkReleaseInput): ZkReleaseDecision {
  const { cmd, shape, holderStat: stat, reported } = input;
  const refuse = (outcome: ReleaseOutcome, message: string, path: string | null = null): ZkReleaseDecision => ({
    kind: "refuse",
    outcome,
    message,
    path,
    steps: [],
  });
  if (!reported) return refuse("nothing-to-do", "this agent no longer sees the lock: nothing to release");
  const holder = releaseHolder(shape);
  if (!shape || !holder) return refuse("nothing-to-do", "no contender holds the lock now: nothing to release");
  const name = shownName(holder);
  // The operator saw the owner as shown: the node's name, or a single-node lock's holder name from its data.
  if (name !== cmd.expectedOwner && holderOwner(shape, holder) !== cmd.expectedOwner) {
    return refuse(
      "refused-owner-changed",
      `the holder is now ${name}, not ${escapeText(cmd.expectedOwner, NAME_CHARS)}: nothing deleted`,
      holder.path,
    );
  }
  if (!stat) return refuse("nothing-to-do", `${name} went just now: nothing to release`, holder.path);
  // Same name is not enough for a single-node lock: the node may have been deleted and created again by another
  // client. The session and creation time tell one incarnation from the next.
  const queuedAt = new Date(holder.ctimeMs).toISOString();
  const shown = reported.holder;
  if (
    stat.ephemeralOwner !== holder.session ||
    stat.ctimeMs !== holder.ctimeMs ||
    (shown && (shown.session !== holder.session || shown.queuedAt !== queuedAt))
  ) {
    return refuse(
      "refused-owner-changed",
      `${name} is a new node since the view you acted on (session ${stat.ephemeralOwner}, created ${new Date(stat.ctimeMs).toISOString()}): nothing deleted`,
      holder.path,
    );
  }
  const below = shape.path === "/" ? "/" : `${shape.path}/`;
  const inside =
    shape.kind === "simple" ? holder.path === shape.path : holder.path.startsWith(below) && holder.path !== below;
  if (!inside) {
    return refuse(
      "refused",
      `${name} is not a contender node below ${shape.path}: lockscope never deletes a lock parent`,
      holder.path,
    );
  }
  if (stat.numChildren > 0) {
    return refuse(
      "refused",
      `${name} has ${stat.numChildren} children: a contender never does, so it is not deleted`,
      holder.path,
    );
  }
  const persistent = stat.ephemeralOwner === ZERO_SESSION;
  if (persistent && (holder.recipe === "generic-sequential" || holder.recipe === "simple-ephemeral")) {
    return refuse(
      "refused",
      `${name} is PERSISTENT and not named by a recognised lock recipe: it may be a queue item or a change log, not a lock; delete it yourself if you are sure`,
      holder.path,
    );
  }

  const steps = [
    `delete ${escapeText(holder.path, 1024)} (version ${stat.version}, session ${holder.session}) on ${input.sourceId}; ${afterDelete(shape, holder)}`,
    shape.kind === "simple"
      ? `only while its version is still ${stat.version}; ZooKeeper's delete can condition on nothing else, so the session and creation time were checked just before`
      : `only while its version is still ${stat.version}; a sequential name is never reused under one parent, so a node created since is never mistaken for it`,
    persistent
      ? `${name} is PERSISTENT (no session owns it): nothing but a delete frees it`
      : sessionStep(holder.session, input.table),
  ];
  if (shape.kind !== "simple") steps.push(`the lock parent ${escapeText(shape.path, 1024)} is kept`);
  return { kind: "delete", path: holder.path, version: stat.version, steps };
}
