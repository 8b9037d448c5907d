/**
 * Validation of an agent's answer to a release command, before it is shown to the operator and written to the audit
 * log. The schema is annotated with the contract's type, so the two cannot silently drift apart.
 */
import { z } from "zod";
import type { ReleaseOutcome, ReleaseResult } from "./release";
import { checkBody, type BodyCheck } from "./requests";

const text = z.string().max(4096);
const outcomes = [
  "released",
  "nothing-to-do",
  "refused-owner-changed",
  "dry-run",
  "refused",
  "rejected",
  "error",
] as const satisfies readonly ReleaseOutcome[];
const outcome = z.enum(outcomes);

const releaseResultSchema: z.ZodType<ReleaseResult> = z.object({
  outcome,
  message: text,
  plan: z.array(text).max(1000),
  perNode: z.array(z.object({ node: text, outcome, detail: text.optional() })).max(1000),
});

export function parseReleaseResult(input: unknown): BodyCheck<ReleaseResult> {
  return checkBody(releaseResultSchema, input);
}
