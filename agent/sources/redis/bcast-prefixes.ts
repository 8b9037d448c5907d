/**
 * BCAST prefixes for server-assisted client tracking, derived from LOCK_PATTERNS. `CLIENT TRACKING ... BCAST
 * PREFIX p` makes the server announce every write under p, new keys included, so a lock created under a literal
 * prefix is found at once instead of by the paced SCAN.
 */

/** Glob characters of Redis's stringmatchlen: everything before the first one is literal. */
const META = new Set(["*", "?", "[", "\\"]);

/**
 * The literal start of a glob, or "" when it starts with a wildcard. Samples: "mutex:*" -> "mutex:",
 * "semaphore:*" -> "semaphore:", "*[lL][oO][cC][kK]*" -> "", "job-lock:prod:?" -> "job-lock:prod:".
 * A backslash escape ends the prefix too: rare in lock patterns, and a shorter prefix is still correct.
 */
export function literalPrefix(pattern: string): string {
  let i = 0;
  while (i < pattern.length && !META.has(pattern[i]!)) i++;
  return pattern.slice(0, i);
}

/**
 * The prefixes to register: one per pattern with a literal prefix of at least `minLength` bytes (a one-letter
 * prefix would announce a large share of a busy server's writes), and no two overlapping, because the server
 * refuses overlapping prefixes on one connection ("Prefix 'mutex:' overlaps with another provided prefix
 * 'mutex:a'"): of two where one starts the other, the shorter covers both. Patterns without a usable prefix are
 * left to keyspace notifications and the paced SCAN.
 */
export function bcastPrefixes(patterns: readonly string[], minLength = 3): string[] {
  const candidates = [...new Set(patterns.map(literalPrefix).filter((p) => Buffer.byteLength(p) >= minLength))];
  candidates.sort((a, b) => a.length - b.length || (a < b ? -1 : 1));
  const kept: string[] = [];
  for (const p of candidates) if (!kept.some((k) => p.startsWith(k))) kept.push(p);
  return kept;
}
