/**
 * Force-release of a Redlock lock across the nodes of its group. Pure: the source re-reads the nodes and runs the
 * compare-and-delete on each; this decides whether to go ahead, words the plan, and adds up the nodes' answers.
 *
 * A Redlock lock is one token on N independent masters, so a release is N conditional deletes, each of which can
 * succeed, find nothing, find someone else's token, or not answer. The operator needs each of those, and one
 * outcome that does not hide the worst of them.
 */
import type { ReleaseNodeResult, ReleaseOutcome, ReleaseResult } from "../../../lib/contract/release";

/** What the fresh read found on one node, before anything is deleted. */
export interface NodeReading {
  node: string;
  /** False when the node did not answer the re-read in time (or failed): its key is unknown. */
  answered: boolean;
  /** The key's token as shown to operators (escaped); null when the key is absent. */
  token: string | null;
  error?: string;
}

export type ReleaseDecision = { kind: "go" } | { kind: "stop"; result: ReleaseResult };

/** Enough of a token to tell tokens apart in a message; the full one is in the plan and the lock. */
export function shortToken(token: string, max = 12): string {
  return token.length > max ? `${token.slice(0, max - 2)}…` : token;
}

/**
 * Whether a release may go ahead, from the winning token of a fresh quorum evaluation. Refuses when the winner is
 * no longer the owner the operator saw (another client took the lock since): nothing is deleted anywhere.
 */
export function decideRelease(input: {
  expectedOwner: string;
  /** The token with the most live votes at the re-read (evaluateQuorum's winner); null when none. */
  winner: string | null;
  votes: number;
  needed: number;
  readings: readonly NodeReading[];
}): ReleaseDecision {
  const { readings, expectedOwner } = input;
  const n = readings.length;
  const answered = readings.filter((r) => r.answered);
  const stop = (outcome: ReleaseOutcome, message: string): ReleaseDecision => ({
    kind: "stop",
    result: { outcome, message, plan: [], perNode: readings.map((r) => refusedNode(r, expectedOwner)) },
  });
  if (answered.length === 0) return stop("error", `none of the ${n} nodes answered the re-read: nothing deleted`);
  const holders = answered.filter((r) => r.token !== null);
  if (holders.length === 0) {
    return stop(
      "nothing-to-do",
      answered.length === n
        ? "the key is gone on every node: nothing to release"
        : `the key is gone on the ${answered.length} of ${n} nodes that answered: nothing deleted`,
    );
  }
  if (input.winner !== expectedOwner) {
    return stop(
      "refused-owner-changed",
      `the owner is now ${input.winner === null ? "unknown" : shortToken(input.winner, 40)} ` +
        `(${input.votes} of ${n} nodes), not the one you saw: nothing deleted`,
    );
  }
  return { kind: "go" };
}

/** A node's line when the release was stopped before any write. */
function refusedNode(r: NodeReading, expectedOwner: string): ReleaseNodeResult {
  if (!r.answered) return { node: r.node, outcome: "error", detail: r.error ?? "no answer" };
  if (r.token === null) return { node: r.node, outcome: "nothing-to-do", detail: "key absent" };
  if (r.token !== expectedOwner)
    return { node: r.node, outcome: "refused-owner-changed", detail: `holds ${shortToken(r.token)}` };
  return { node: r.node, outcome: "refused", detail: "holds the token you saw, but the lock is not that token's now" };
}

/**
 * One step per node, in node order: the same conditional delete everywhere, since a node that looks absent or
 * silent at the re-read may still hold the token (the delete is a no-op where it does not).
 */
export function releaseSteps(
  resource: string,
  nodes: readonly string[],
  owner: string,
  format: { kind: "string" } | { kind: "hash"; channel: string },
): string[] {
  return nodes.map((node) =>
    format.kind === "string"
      ? `DEL ${resource} on ${node} only if its value is still ${owner}`
      : `DEL ${resource} on ${node} only if the hash still has holder field ${owner}` +
        (format.channel ? `, then PUBLISH ${format.channel} 0 there (wakes Redisson waiters)` : ""),
  );
}

/** The dry run's per-node line: what each node holds now, so the plan can be weighed against the grid. */
export function dryRunNode(r: NodeReading, expectedOwner: string): ReleaseNodeResult {
  const detail = !r.answered
    ? `no answer (${r.error ?? "unknown"}): the delete would still be sent`
    : r.token === null
      ? "key absent: nothing to delete"
      : r.token === expectedOwner
        ? "holds the token: would be deleted"
        : `holds another token (${shortToken(r.token)}): would be left alone`;
  return { node: r.node, outcome: "dry-run", detail };
}

const plural = (k: number, word: string) => `${k} ${word}${k === 1 ? "" : "s"}`;
const names = (rs: readonly ReleaseNodeResult[]) => rs.map((r) => r.node).join(", ");

/**
 * The overall outcome of the conditional deletes: released when at least one node deleted the token and no node
 * holds another one; otherwise the most informative of the rest (someone else's token, then a failure, then
 * nothing found). The message says what happened where, and whether the token may still hold a quorum.
 */
export function aggregateRelease(
  perNode: readonly ReleaseNodeResult[],
  needed: number,
): Pick<ReleaseResult, "outcome" | "message"> {
  const by = (o: ReleaseOutcome) => perNode.filter((r) => r.outcome === o);
  const released = by("released");
  const gone = by("nothing-to-do");
  const refused = by("refused-owner-changed");
  const failed = perNode.filter((r) => r.outcome === "error" || r.outcome === "refused");
  const n = perNode.length;
  const notes: string[] = [];
  if (gone.length > 0) notes.push(`already gone on ${plural(gone.length, "node")}`);
  if (failed.length > 0) {
    notes.push(
      `${plural(failed.length, "node")} did not confirm (${names(failed)}): a delete still queued there only ` +
        "removes this token",
    );
  }
  // Only nodes that did not confirm can still hold the token; as many as a quorum means the lock may survive.
  const mayHoldQuorum = failed.length >= needed;
  const tail = notes.length > 0 ? `; ${notes.join("; ")}` : "";

  if (released.length > 0 && refused.length === 0) {
    return {
      outcome: "released",
      message:
        `released on ${released.length} of ${n} nodes${tail}` +
        (mayHoldQuorum ? `; the token may still hold a quorum on the ${failed.length} that did not answer` : ""),
    };
  }
  if (refused.length > 0) {
    return {
      outcome: "refused-owner-changed",
      message:
        `${plural(refused.length, "node")} hold${refused.length === 1 ? "s" : ""} another token now ` +
        `(${names(refused)}), left alone` +
        (released.length > 0
          ? `; deleted on ${plural(released.length, "node")} where it was still the token you saw`
          : "; nothing deleted") +
        tail,
    };
  }
  if (failed.length > 0) {
    return { outcome: "error", message: `no node confirmed a delete${tail}` };
  }
  return {
    outcome: "nothing-to-do",
    message: n === 0 ? "no node to release on" : "the key was already gone on every node",
  };
}
