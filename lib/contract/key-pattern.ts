/**
 * The key pattern of a lock's resource, derived from the name itself rather than from configuration: the parts that
 * vary per lock (UUIDs, hex runs, digits) become `*`, so `lock:order:12345` and `lock:order:977` are both
 * `lock:order:*`. Pure; used by the dashboard's index (fleet overview, `pattern` filter).
 */

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** A hex run of 8+ that is a whole token: ids, hashes, tokens. A word like `deadbeef` is left alone (no digit). */
const HEX_RUN = /(?<![0-9a-z])(?=[0-9a-f]*\d)[0-9a-f]{8,}(?![0-9a-z])/gi;
const DIGITS = /\d+/g;
/** Patterns are bounded: a hostile 4 KB key name yields a bounded group name. */
export const MAX_PATTERN_LENGTH = 200;

export function keyPattern(resource: string): string {
  const p = resource
    .replace(UUID, "*")
    .replace(HEX_RUN, "*")
    .replace(DIGITS, "*")
    .replace(/\*{2,}/g, "*");
  return p.length > MAX_PATTERN_LENGTH ? `${p.slice(0, MAX_PATTERN_LENGTH - 1)}…` : p;
}
