/** What the force-release controls say: outcome labels and why a button is disabled. Pure. */

/** Plain words for the outcomes, so the panel never reads "dry-run: dry run: …". */
export const OUTCOME_LABEL: Record<string, string> = {
  released: "Released",
  "dry-run": "Dry run",
  "nothing-to-do": "Nothing to do",
  "refused-owner-changed": "Refused, the holder changed",
  refused: "Refused",
  rejected: "Rejected",
  error: "Failed",
};

/** Why a release button is disabled, in words (null: it is enabled). */
export function releaseBlocker(s: {
  busy: boolean;
  reason: string;
  confirmed: boolean;
  ownerChanged: boolean;
  /** The lock stopped being held while the panel was open (the panel stays, with the typed reason). */
  notHeld?: boolean;
}): string | null {
  if (s.busy) return "Waiting for the agent's answer…";
  if (s.notHeld) return "The lock is not held right now: there is nothing to release.";
  if (s.ownerChanged) return "The holder changed while this panel was open: close it and look again.";
  if (s.reason.trim().length < 3) return "Give a reason first (at least 3 characters; it goes to the audit log).";
  if (!s.confirmed) return "Type the resource name exactly to confirm.";
  return null;
}
