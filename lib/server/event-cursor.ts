import type { LockEvent, LockEventType } from "../contract/lock";

/** Every event type, for checking `type=` on /api/events. */
export const EVENT_TYPES: readonly LockEventType[] = [
  "acquired",
  "released",
  "expired",
  "renewed",
  "owner-changed",
  "lost",
  "source-down",
  "source-up",
];

const NOT_OURS = "before is not a cursor this API gave out (pass nextCursor unchanged)";

/** The position after the last event of a page (newest first): its time and id, opaque to callers. */
export function encodeEventCursor(e: Pick<LockEvent, "at" | "id">): string {
  return Buffer.from(JSON.stringify([Date.parse(e.at), e.id])).toString("base64url");
}

export function decodeEventCursor(raw: string): { at: Date; id: string } | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    return NOT_OURS;
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) return NOT_OURS;
  const [ms, id] = parsed as unknown[];
  if (typeof ms !== "number" || !Number.isFinite(ms) || typeof id !== "string" || id.length === 0) return NOT_OURS;
  const at = new Date(ms);
  return Number.isNaN(at.getTime()) ? NOT_OURS : { at, id };
}

/** `type=acquired,owner-changed` → the list; a clear error naming the unknown one. */
export function parseEventTypes(raw: string | null): LockEventType[] | undefined | string {
  if (raw === null || raw.trim() === "") return undefined;
  const types = raw.split(",").map((t) => t.trim());
  const bad = types.find((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (bad !== undefined) return `type ${bad} is unknown; known: ${EVENT_TYPES.join(", ")}`;
  return types as LockEventType[];
}
