/**
 * The one force-release path of the agent, for every backend:
 *   fresh read -> pure decision (with the fingerprint guard) -> dry run -> guarded write -> outcome wording
 *   -> re-read -> tracker output.
 * Each backend supplies a small adapter (how to read, decide, write and re-read); the order of the steps, the
 * exact-holding guard, error wording and what is published are decided here, once.
 */
import type { ReleaseCommand, ReleaseNodeResult, ReleaseOutcome, ReleaseResult } from "../../lib/contract/release";
import { mergeInto, type TrackerOutput } from "../core/tracker";

export type ReleaseDecision<P> =
  | { kind: "go"; plan: P; steps: string[] }
  | { kind: "stop"; outcome: ReleaseOutcome; message: string; steps?: string[]; perNode?: ReleaseNodeResult[] };

export interface ReleaseAdapter<R, P> {
  /** Where the lock lives (a node, a group, an ensemble): the per-node line when the adapter names none. */
  readonly where: string;
  /** A fresh read of the lock as it is now. */
  read(): Promise<R>;
  /**
   * The exact holding in the fresh read (Lock.ownerFingerprint as it would be reported now); null when the lock is
   * gone or has no holder that can be named exactly.
   */
  fingerprint(reading: R): string | null;
  /** Pure: whether a release may go ahead on this reading, and the plan shown to the operator. */
  decide(reading: R, cmd: ReleaseCommand): ReleaseDecision<P>;
  /** The dry run's answer: what each node holds now against the plan. */
  dryRun(reading: R, plan: P, cmd: ReleaseCommand): { message: string; perNode: ReleaseNodeResult[] };
  /** The guarded write(s), each conditional on the exact holding; per node, with why when nothing was deleted. */
  write(reading: R, plan: P, cmd: ReleaseCommand): Promise<ReleaseNodeResult[]>;
  /** The overall outcome and its wording from the nodes' answers (after settle, so it may use the re-read). */
  summarise(
    perNode: readonly ReleaseNodeResult[],
    plan: P,
    cmd: ReleaseCommand,
  ): Pick<ReleaseResult, "outcome" | "message">;
  /** After the write(s): re-read and report what changed through the tracker (called before summarise). */
  settle(perNode: readonly ReleaseNodeResult[], plan: P, cmd: ReleaseCommand): Promise<TrackerOutput | null>;
  /** What the fresh read shows, published whatever the decision (an owner change shows at once). */
  seen?(reading: R): TrackerOutput | null;
}

export const NO_OUTPUT: TrackerOutput = { events: [], upserts: [], removed: [] };

export interface ReleaseRun {
  result: ReleaseResult;
  output: TrackerOutput;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function merge(...outs: Array<TrackerOutput | null | undefined>): TrackerOutput {
  const o: TrackerOutput = { events: [], upserts: [], removed: [] };
  for (const x of outs) {
    if (x) mergeInto(o, x);
  }
  return o;
}

/**
 * The exact-holding guard, the same for every backend. A real release needs the fingerprint the operator saw, and
 * it must equal the fresh read's; a dry run without one only describes. Pure.
 */
export function guardFingerprint(
  cmd: ReleaseCommand,
  actual: string | null,
): { outcome: ReleaseOutcome; message: string } | null {
  const expected = cmd.expectedFingerprint;
  if (expected === undefined) {
    if (cmd.dryRun) return null;
    return {
      outcome: "refused",
      message:
        "the release names no exact holding (expectedFingerprint, the lock's ownerFingerprint as you saw it): nothing deleted",
    };
  }
  if (actual === null) {
    return {
      outcome: "refused",
      message: "the holder cannot be named exactly (no fingerprint for it now): nothing deleted",
    };
  }
  if (actual !== expected) {
    return {
      outcome: "refused-owner-changed",
      message: `the holding changed since you looked (it is ${actual.slice(0, 17)}…, you saw ${expected.slice(0, 17)}…): nothing deleted`,
    };
  }
  return null;
}

export async function runRelease<R, P>(adapter: ReleaseAdapter<R, P>, cmd: ReleaseCommand): Promise<ReleaseRun> {
  const line = (outcome: ReleaseOutcome, detail?: string): ReleaseNodeResult[] => [
    detail === undefined ? { node: adapter.where, outcome } : { node: adapter.where, outcome, detail },
  ];
  const answer = (
    outcome: ReleaseOutcome,
    message: string,
    plan: string[],
    perNode: ReleaseNodeResult[],
    output: TrackerOutput = NO_OUTPUT,
  ): ReleaseRun => ({ result: { outcome, message, plan, perNode }, output });

  let reading: R;
  try {
    reading = await adapter.read();
  } catch (err) {
    const message = `release failed on ${adapter.where}: ${errorText(err)}; nothing deleted`;
    return answer("error", message, [], line("error", message));
  }
  let seen: TrackerOutput | null = null;
  try {
    seen = adapter.seen?.(reading) ?? null;
  } catch {
    seen = null; // the view catches up at the next poll; the release itself does not depend on it
  }

  const decision = adapter.decide(reading, cmd);
  if (decision.kind === "stop") {
    return answer(
      decision.outcome,
      decision.message,
      decision.steps ?? [],
      decision.perNode ?? line(decision.outcome),
      merge(seen),
    );
  }
  // Decided on the fresh read, so what the guard compares is the holding that the write will be conditioned on.
  const guard = guardFingerprint(cmd, adapter.fingerprint(reading));
  if (guard) return answer(guard.outcome, guard.message, decision.steps, line(guard.outcome), merge(seen));

  if (cmd.dryRun) {
    const d = adapter.dryRun(reading, decision.plan, cmd);
    return answer("dry-run", d.message, decision.steps, d.perNode, merge(seen));
  }

  let perNode: ReleaseNodeResult[];
  try {
    perNode = await adapter.write(reading, decision.plan, cmd);
  } catch (err) {
    // A request that timed out may still reach the server; every write is conditioned on the exact holding.
    const message = `release failed on ${adapter.where}: ${errorText(err)}; if the write reached the server it removed only the holding you saw`;
    return answer("error", message, decision.steps, line("error", message), merge(seen));
  }
  let settled: TrackerOutput | null = null;
  try {
    settled = await adapter.settle(perNode, decision.plan, cmd);
  } catch {
    settled = null; // the outcome stands; the next poll re-reads the lock
  }
  const { outcome, message } = adapter.summarise(perNode, decision.plan, cmd);
  return answer(outcome, message, decision.steps, perNode, merge(seen, settled));
}
