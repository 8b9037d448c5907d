/**
 * Schemas of the HTTP request bodies the dashboard accepts. Shared: the server validates with them, and the browser
 * can import the inferred types. Objects are strict, so a misspelt field (`dryrun`) is an error rather than silently
 * ignored: a release meant as a dry run must never run for real because a flag was not recognised.
 */
import { z } from "zod";
import type { ReleaseRequestBody } from "./release";

export const MAX_RELEASE_REASON = 1000;
/** As long as any text the agent may send (validate.ts), so every owner the dashboard shows can be sent back. */
const MAX_TEXT = 4096;

/** A string field: "is required" when missing, "must be a string" when of another type. */
const str = (what: string) =>
  z.string({ error: (issue) => (issue.input === undefined ? `is required: ${what}` : `must be a string: ${what}`) });

const isoTime = str("an ISO time, as Lock.since")
  .max(40, "must be an ISO time (at most 40 characters)")
  .refine((s) => !Number.isNaN(Date.parse(s)), "must be an ISO time, as Lock.since");

export const releaseRequestSchema = z.strictObject(
  {
    expectedOwner: str("the owner you saw, so a lock taken since is never freed")
      .min(1, "is required: the owner you saw, so a lock taken since is never freed")
      .max(MAX_TEXT, `must be at most ${MAX_TEXT} characters`),
    expectedSince: isoTime.optional(),
    expectedFingerprint: str("Lock.ownerFingerprint as you saw it")
      .min(1, "must not be empty")
      .max(80, "must be at most 80 characters (Lock.ownerFingerprint)")
      .optional(),
    reason: str("why the lock is released")
      .max(MAX_RELEASE_REASON, `must be at most ${MAX_RELEASE_REASON} characters`)
      .refine((s) => s.trim().length >= 3, "is required (at least 3 characters): why the lock is released"),
    dryRun: z.boolean({ error: "must be true or false (a JSON boolean, not a string)" }).optional(),
    confirm: str("the resource name, typed").max(MAX_TEXT, `must be at most ${MAX_TEXT} characters`).optional(),
    purgeWaiter: str("a waiter's owner as shown")
      .min(1, "must not be empty")
      .max(MAX_TEXT, `must be at most ${MAX_TEXT} characters`)
      .optional(),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : "send a JSON object") },
) satisfies z.ZodType<ReleaseRequestBody>;

/** Body of POST /api/alerts/:id/ack: empty, or a note kept in the audit log. */
export const alertAckSchema = z.strictObject(
  {
    note: str("a note for the audit log")
      .max(MAX_RELEASE_REASON, `must be at most ${MAX_RELEASE_REASON} characters`)
      .optional(),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : "send a JSON object (or no body)") },
);
export type AlertAckBody = z.infer<typeof alertAckSchema>;

/** Body of POST /api/auth/login. */
export const loginSchema = z.strictObject(
  {
    name: str("the user name").min(1, "is required").max(256, "must be at most 256 characters"),
    password: str("the password").max(1024, "must be at most 1024 characters"),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? undefined : "send a JSON object { name, password }") },
);
export type LoginBody = z.infer<typeof loginSchema>;

export type BodyCheck<T> = { ok: true; value: T } | { ok: false; error: string; field: string | null };

/** Validates a parsed JSON body; the error names the first wrong field, as `field: what is wrong`. */
export function checkBody<T>(schema: z.ZodType<T>, input: unknown): BodyCheck<T> {
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  if (issue?.code === "unrecognized_keys") {
    const keys = issue.keys.join(", ");
    return { ok: false, field: issue.keys[0] ?? null, error: `${keys}: not a known field` };
  }
  const field = issue && issue.path.length > 0 ? issue.path.map(String).join(".") : null;
  const message = issue?.message ?? "invalid";
  return { ok: false, field, error: field ? `${field}: ${message}` : message };
}
