/**
 * A Redlock member's health as the shared contract's NodeStatus, which is what reaches the dashboard. Pure.
 *
 * NodeStatus has `up` but no "slow": a slow node is up and carries the reason in `error` (an answer slower than the
 * slow threshold, or a missed deadline not yet counted as down). So: !up = down, up with an error = slow.
 * The reasons are fixed phrases, not the measured figures, so a status only changes when the health does.
 */
import type { NodeStatus } from "../../../lib/contract/lock";
import type { RedlockNodeHealth } from "./redlock-source";

export const REDLOCK_MEMBER = "redlock-member";

export function redlockNodeStatus(h: RedlockNodeHealth, slowMs: number): NodeStatus {
  const s: NodeStatus = { id: h.node, role: REDLOCK_MEMBER, up: h.state !== "down" };
  // Figures from an earlier answer are not this node's state now: a silent node shows none.
  const fresh = h.missedPolls === 0 && h.lastAnswerAt !== undefined;
  if (fresh && h.latencyMs !== undefined) s.latencyMs = Math.max(0, h.latencyMs);
  if (fresh && h.clockOffsetMs !== undefined) s.clockOffsetMs = h.clockOffsetMs;
  if (h.error) s.error = h.error;
  else if (h.state === "slow") s.error = `slow: answers take over ${slowMs} ms`;
  return s;
}
