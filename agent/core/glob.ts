/**
 * Redis SCAN MATCH glob semantics (stringmatchlen in redis/src/util.c): `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, and
 * `\` escaping. The agent matches client-side so that one SCAN pass serves every pattern instead of one per pattern.
 */
export function compileGlob(pattern: string): RegExp {
  return new RegExp(`^${globTokens(pattern).join("")}$`);
}

/**
 * The pattern as regular-expression pieces, one per glob token: `[\s\S]*` for `*`, `[\s\S]` for `?`, and for a
 * class or a literal character a piece that matches exactly one character.
 */
function globTokens(pattern: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*") out.push(ANY_RUN);
    else if (c === "?") out.push(ANY_ONE);
    else if (c === "\\" && i + 1 < pattern.length) out.push(escapeRegex(pattern[++i]!));
    else if (c === "[") {
      const end = findClassEnd(pattern, i);
      if (end < 0) {
        out.push("\\[");
        continue;
      }
      let body = pattern.slice(i + 1, end);
      let negate = false;
      if (body.startsWith("^")) {
        negate = true;
        body = body.slice(1);
      }
      out.push(`[${negate ? "^" : ""}${classBody(body)}]`);
      i = end;
    } else out.push(escapeRegex(c));
  }
  return out;
}

const ANY_RUN = "[\\s\\S]*";
const ANY_ONE = "[\\s\\S]";

function findClassEnd(p: string, start: number): number {
  for (let j = start + 1; j < p.length; j++) {
    if (p[j] === "\\") j++;
    else if (p[j] === "]" && j > start + 1) return j;
  }
  return -1;
}

function classBody(body: string): string {
  let out = "";
  for (let k = 0; k < body.length; k++) {
    const c = body[k]!;
    if (c === "\\" && k + 1 < body.length) out += escapeRegex(body[++k]!);
    else if (c === "-" && k > 0 && k + 1 < body.length) out += "-";
    else out += escapeRegex(c);
  }
  return out || "\\s\\S";
}

function escapeRegex(c: string): string {
  return c.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
}

/** All patterns as one regular expression: one test per scanned key instead of one per pattern. */
export function compilePatterns(patterns: readonly string[]): (key: string) => boolean {
  if (patterns.length === 0) return () => false;
  const one = new RegExp(patterns.map((p) => `(?:${compileGlob(p).source})`).join("|"));
  return (key) => one.test(key);
}

/** Distinct byte classes the prefilter tracks: bits of a small integer. More are left out (a weaker filter). */
const MAX_CLASSES = 30;

/**
 * A cheap necessary condition for compilePatterns on a key's raw bytes (patterns given as latin1, one character per
 * byte, as the Redis source gives them): each character class or literal of a pattern must match one byte of any
 * key the pattern matches, so a key that lacks every byte of some class of each pattern cannot match. False means
 * "matches none"; true means "test it with the regular expression". A SCAN pass tests a million keys with it
 * without making a string of each (the default patterns' classes, l/L o/O c/C k/K and so on, rule out most keys).
 */
export function compileBytePrefilter(patterns: readonly string[]): (key: Uint8Array) => boolean {
  if (patterns.length === 0) return () => false;
  const classes = new Map<string, number>();
  const byteBits = new Int32Array(256);
  const needs: number[] = [];
  for (const pattern of patterns) {
    let need = 0;
    for (const token of globTokens(pattern)) {
      if (token === ANY_RUN || token === ANY_ONE) continue;
      const members = tokenBytes(token);
      const signature = members.join();
      let bit = classes.get(signature);
      if (bit === undefined) {
        if (classes.size >= MAX_CLASSES) continue;
        bit = 1 << classes.size;
        classes.set(signature, bit);
        for (const b of members) byteBits[b]! |= bit;
      }
      need |= bit;
    }
    // A pattern without a class or literal (`*`, `??`) can match any key of the right length: no filter at all.
    if (need === 0) return () => true;
    needs.push(need);
  }
  return (key) => {
    let seen = 0;
    for (let i = 0; i < key.length; i++) seen |= byteBits[key[i]!]!;
    for (const need of needs) if ((seen & need) === need) return true;
    return false;
  };
}

/** The bytes one class or literal token matches (a key's bytes read as latin1, one character per byte). */
function tokenBytes(token: string): number[] {
  const one = new RegExp(`^${token}$`);
  const members: number[] = [];
  for (let b = 0; b < 256; b++) if (one.test(String.fromCharCode(b))) members.push(b);
  return members;
}

/** Longest run of single-byte tokens the superset glob aligns: longer runs add little and lengthen each test. */
const MAX_RUN = 8;

/**
 * One glob that every key matching any of the patterns also matches (patterns as latin1, one character per byte),
 * for SCAN's MATCH: the server then leaves out most keys that cannot be locks instead of sending them. Each
 * pattern's longest run of classes and literals (no `*` or `?` inside) must occur in a key it matches; the runs
 * are cut to the shortest one's length and united position by position: for the defaults `*[lLmMsS][oOuUeE]
 * [cCtTmM][kKeEaA]*` ("lock", "mute", "sema"). Null when some pattern has no such run (`*`, `??`): no filter.
 * Every byte is written escaped (`\x` in a class is the byte x in Redis's stringmatchlen), so any byte is safe.
 * The agent's own match (compilePatterns) still decides: this only has to be a necessary condition.
 */
export function supersetGlob(patterns: readonly string[]): string | null {
  if (patterns.length === 0) return null;
  const runs: number[][][] = [];
  for (const pattern of patterns) {
    let best: number[][] = [];
    let run: number[][] = [];
    for (const token of globTokens(pattern)) {
      if (token === ANY_RUN || token === ANY_ONE) run = [];
      else {
        run.push(tokenBytes(token));
        if (run.length > best.length) best = run;
      }
    }
    if (best.length === 0) return null;
    runs.push(best);
  }
  const length = Math.min(MAX_RUN, ...runs.map((r) => r.length));
  let glob = "*";
  for (let i = 0; i < length; i++) {
    const union = new Set<number>();
    for (const r of runs) for (const b of r[i]!) union.add(b);
    const escaped = [...union].sort((a, b) => a - b).map((b) => `\\${String.fromCharCode(b)}`);
    if (union.size === 256) glob += "?";
    else if (union.size === 1) glob += escaped[0]!;
    else glob += `[${escaped.join("")}]`;
  }
  return `${glob}*`;
}
