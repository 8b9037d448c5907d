/**
 * The quorum view of one resource across the N nodes of a Redlock group. Pure: the source reads the nodes, this
 * decides what their answers mean.
 *
 * States, in the order they are decided:
 * - held: the winning token (most votes) is live on at least needed = floor(N/2)+1 nodes, and at least one more
 *   node holds it beyond the lock's validity: losing any single node or key still leaves a quorum.
 * - at-risk: a quorum, but no spare. Exactly `needed` nodes hold it, or the extra ones expire before the validity
 *   ends (an extend that reached only a bare majority). One more node down or one more key expiring loses it.
 * - expired: the lease ran out: either a quorum still has the keys but less time left than the drift allowance,
 *   or the token had a quorum, its last known validity has passed, and the keys left expire within a grace period.
 * - quorum-lost: the token had a quorum at an earlier poll and has fewer than `needed` votes now, while its
 *   validity was still running: nodes went down, or keys vanished early on some of them.
 * - split: two or more tokens, none with a quorum: competing acquires divided the nodes and nobody holds the lock.
 * - minority: one token on fewer than `needed` nodes that never had a quorum (residue of a failed acquire or a
 *   partial release), or a former holder's keys that linger on a minority after its lease ran out.
 *
 * Votes count only nodes that answered. Nodes that did not are listed, and mark the view partial: they might
 * hold the token, but a view the agent cannot confirm is shown as such, not guessed.
 */
import type { Hazard, QuorumNode, QuorumState, QuorumView } from "../../../lib/contract/lock";
import { groupSkew, skewHazard, type GroupSkew, type NodeOffset } from "./clock-skew";

/** node-redlock's defaults: driftFactor 0.01 plus 2 ms for Redis's 1 ms expiry precision. */
export const DRIFT_FACTOR = 0.01;
export const DRIFT_FIXED_MS = 2;

/**
 * After the validity ends, keys that one acquire set on N nodes vanish within about a round trip of each other;
 * leftovers that outlive the validity by more than this (plus the drift allowance) are residue, not an expiry.
 */
export const EXPIRY_GRACE_MS = 250;

export function quorumSize(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/** What node-redlock subtracts from a lock's duration: Math.round(0.01 × duration) + 2 ms. */
export function driftAllowanceMs(leaseMs: number): number {
  return Math.round(DRIFT_FACTOR * leaseMs) + DRIFT_FIXED_MS;
}

/** One node's answer about one resource. */
export interface NodeAnswer {
  node: string;
  state: "up" | "down" | "slow";
  /** False when the node gave no answer in this poll (down, or past its deadline); the key fields are unknown. */
  answered: boolean;
  present: boolean;
  /** The key's value as a comparable, displayable token; null when absent. */
  token: string | null;
  /** PTTL as read: ms left at readAtMs; null when the key has no expiry. */
  pttlMs: number | null;
  /** Agent clock when the reply arrived: PTTLs read at different moments are compared at one instant. */
  readAtMs: number;
  latencyMs?: number;
  error?: string;
  /** Node clock minus agent clock, from TIME (clock-skew.ts); tests inject offsets here. */
  clockOffsetMs?: number;
  clockUncertaintyMs?: number;
}

/** The token that last had a quorum, and until when its validity was predicted to run (null: no expiry). */
export interface PriorHold {
  token: string;
  validUntilMs: number | null;
}

export interface QuorumInput {
  group: string;
  nowMs: number;
  /** One answer per node of the group, answered or not: N is answers.length. */
  answers: readonly NodeAnswer[];
  /**
   * Longest PTTL seen at earlier polls per token: the best estimate of the duration a lock was set with, which the
   * drift allowance is a fraction of. The longest PTTL now is used when it is larger or nothing is known.
   */
  knownLeaseMs?: ReadonlyMap<string, number>;
  prior?: PriorHold | null;
  /** The owner shown at the previous poll: breaks ties after the prior holder, so the owner does not flap. */
  previousToken?: string | null;
}

export interface QuorumResult {
  view: QuorumView;
  /** Winning token: most votes; on a tie the prior holder's, the previous owner, the longest-lived. */
  token: string | null;
  /** Lease of the lock as a whole: the quorum's PTTL when it has one, else the winner's longest-lived key. */
  ttlMs: number | null;
  leaseMs: number | null;
  driftMs: number | null;
  /** Absolute end of the validity (nowMs + validityMs) when the token has a quorum; null otherwise or no expiry. */
  validUntilMs: number | null;
  hazards: Hazard[];
  skew: GroupSkew | null;
}

interface Vote {
  node: string;
  /** ms left at nowMs; Infinity for a key without expiry. */
  left: number;
}

function leftAt(a: NodeAnswer, nowMs: number): number {
  return a.pttlMs === null ? Infinity : a.pttlMs - (nowMs - a.readAtMs);
}

function finite(n: number): number | null {
  return Number.isFinite(n) ? Math.max(0, Math.round(n)) : null;
}

export function evaluateQuorum(input: QuorumInput): QuorumResult {
  const { answers, nowMs, prior } = input;
  const n = answers.length;
  const needed = quorumSize(n);
  const answered = answers.filter((a) => a.answered);
  const silent = answers.filter((a) => !a.answered);

  // Live votes per token, longest-lived first. A key already past its PTTL at nowMs votes for nobody.
  const byToken = new Map<string, Vote[]>();
  for (const a of answered) {
    if (!a.present || a.token === null) continue;
    const left = leftAt(a, nowMs);
    if (left <= 0) continue;
    const votes = byToken.get(a.token) ?? [];
    votes.push({ node: a.node, left });
    byToken.set(a.token, votes);
  }
  for (const v of byToken.values()) v.sort((x, y) => y.left - x.left);

  const preferred = [prior?.token, input.previousToken].filter((t): t is string => typeof t === "string");
  const token = pickWinner(byToken, preferred, needed);
  const votes = token === null ? [] : (byToken.get(token) ?? []);
  const longest = votes[0]?.left ?? 0;
  const current = votes.length > 0 ? finite(longest) : null;
  const known = token === null ? undefined : input.knownLeaseMs?.get(token);
  const leaseMs = current === null && known === undefined ? null : Math.max(current ?? 0, known ?? 0);
  const driftMs = leaseMs === null ? null : driftAllowanceMs(leaseMs);

  let state: QuorumState;
  let validityMs: number | null = null;
  let validUntilMs: number | null = null;
  let ttlMs: number | null;
  const rivals = [...byToken.entries()].filter(([t]) => t !== token);

  if (votes.length >= needed) {
    const quorumLeft = votes[needed - 1]!.left;
    ttlMs = finite(quorumLeft);
    const validity = Number.isFinite(quorumLeft) ? Math.floor(quorumLeft - (driftMs ?? DRIFT_FIXED_MS)) : Infinity;
    validityMs = Number.isFinite(validity) ? Math.max(0, validity) : null;
    validUntilMs = Number.isFinite(validity) ? nowMs + validity : null;
    const spare = votes[needed];
    if (validity <= 0) state = "expired";
    else if (!spare || (Number.isFinite(spare.left) && spare.left <= validity)) state = "at-risk";
    else state = "held";
  } else {
    ttlMs = votes.length > 0 ? finite(longest) : 0;
    const heldBefore = prior !== null && prior !== undefined && token === prior.token;
    const leaseOver = heldBefore && prior.validUntilMs !== null && nowMs >= prior.validUntilMs;
    if (heldBefore && !leaseOver) state = "quorum-lost";
    else if (leaseOver && longest <= (driftMs ?? DRIFT_FIXED_MS) + EXPIRY_GRACE_MS) state = "expired";
    else if (rivals.length > 0) state = "split";
    else state = "minority";
  }

  const offsets: NodeOffset[] = answered
    .filter((a) => a.clockOffsetMs !== undefined)
    .map((a) => ({ node: a.node, offsetMs: a.clockOffsetMs!, uncertaintyMs: a.clockUncertaintyMs ?? 0 }));
  const skew = groupSkew(offsets);

  const view: QuorumView = {
    group: input.group,
    votes: votes.length,
    nodes: n,
    needed,
    state,
    validityMs,
    partial: silent.length > 0,
    perNode: answers.map((a) => perNode(a, nowMs)),
  };
  const hazards = stateHazards(state, view, rivals, silent.length);
  if (silent.length > 0) hazards.push(nodeDownHazard(silent, n, needed));
  const skewed = skewHazard(skew, driftMs);
  if (skewed) hazards.push(skewed);
  return { view, token, ttlMs, leaseMs, driftMs, validUntilMs, hazards, skew };
}

function pickWinner(byToken: Map<string, Vote[]>, preferred: readonly string[], needed: number): string | null {
  let best: string | null = null;
  let bestVotes: Vote[] = [];
  for (const [t, v] of byToken) {
    if (best === null || better(t, v, best, bestVotes, preferred, needed)) {
      best = t;
      bestVotes = v;
    }
  }
  // A former holder with no live key left is still the lock's subject: its disappearance is what the view shows.
  return best ?? preferred[0] ?? null;
}

function better(t: string, v: Vote[], best: string, bv: Vote[], preferred: readonly string[], needed: number): boolean {
  if (v.length !== bv.length) return v.length > bv.length;
  const rank = (x: string) => {
    const i = preferred.indexOf(x);
    return i < 0 ? preferred.length : i;
  };
  if (rank(t) !== rank(best)) return rank(t) < rank(best);
  const k = Math.min(needed, v.length) - 1;
  if (v[k]!.left !== bv[k]!.left) return v[k]!.left > bv[k]!.left;
  return t < best; // deterministic, so the owner does not flap between polls
}

function perNode(a: NodeAnswer, nowMs: number): QuorumNode {
  const q: QuorumNode = {
    node: a.node,
    state: a.state,
    present: a.answered && a.present,
    token: a.answered && a.present ? a.token : null,
    ttlMs: a.answered && a.present ? finite(leftAt(a, nowMs)) : null,
  };
  if (a.latencyMs !== undefined) q.latencyMs = Math.round(a.latencyMs * 10) / 10;
  if (a.error !== undefined) q.error = a.error;
  return q;
}

function stateHazards(state: QuorumState, v: QuorumView, rivals: Array<[string, Vote[]]>, silent: number): Hazard[] {
  const of = `${v.votes} of ${v.nodes} nodes hold the token, ${v.needed} needed`;
  const hazards: Hazard[] = [];
  if (state === "at-risk") {
    hazards.push({
      code: "redlock-at-risk",
      severity: "warning",
      message:
        `Quorum with no spare: ${of}` +
        (v.votes === v.needed ? "." : `, and the other ${v.votes - v.needed} expire before the lock's validity ends.`) +
        " One more node down or key expiring loses the lock.",
    });
  } else if (state === "quorum-lost") {
    hazards.push({
      code: "redlock-quorum-lost",
      severity: "critical",
      message:
        `Quorum lost while the lock was valid: ${of}` +
        (silent > 0 ? ` (${silent} did not answer)` : "") +
        ". Another client can acquire it while the holder still believes it owns it.",
    });
  } else if (state === "expired") {
    hazards.push({
      code: "redlock-expired",
      severity: "warning",
      message: "The lease ran out without a renewal; a holder still working is no longer protected.",
    });
  } else if (state === "minority") {
    hazards.push({
      code: "redlock-minority",
      severity: "warning",
      message:
        `Leftover without a quorum: ${of}. Residue of a failed acquire or a partial release; ` +
        "it blocks acquires on those nodes until it expires.",
    });
  }
  if (rivals.length > 0 && v.votes >= v.needed) {
    hazards.push({
      code: "redlock-minority",
      severity: "warning",
      message: `Another token is also present (${describeRivals(rivals)}): residue of a failed acquire or a partial release.`,
    });
  } else if (rivals.length > 0) {
    hazards.push({
      code: "redlock-split",
      severity: "critical",
      message:
        `Split vote: ${rivals.length + 1} tokens and none with ${v.needed} of ${v.nodes} nodes ` +
        `(${v.votes} for the leading token; ${describeRivals(rivals)}). Nobody holds the lock.`,
    });
  }
  return hazards;
}

function describeRivals(rivals: Array<[string, Vote[]]>): string {
  return rivals
    .slice(0, 4)
    .map(([, votes]) => `${votes.length} node${votes.length === 1 ? "" : "s"}`)
    .join(", ")
    .concat(rivals.length > 4 ? `, +${rivals.length - 4} more` : "");
}

function nodeDownHazard(silent: readonly NodeAnswer[], n: number, needed: number): Hazard {
  const names = silent.map((a) => a.node).join(", ");
  const left = n - silent.length;
  return {
    code: "redlock-node-down",
    severity: left < needed ? "critical" : "warning",
    message:
      `${silent.length} of ${n} nodes did not answer (${names}): votes are counted from the ${left} that did` +
      (left < needed ? `, fewer than the ${needed} a quorum needs.` : "."),
  };
}
