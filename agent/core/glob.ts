/**
 * Redis SCAN MATCH glob semantics (stringmatchlen in redis/src/util.c): `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, and
 * `\` escaping. The agent matches client-side so that one SCAN pass serves every pattern instead of one per pattern.
 */
export function compileGlob(pattern: string): RegExp {
  let re = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*") re += "[\\s\\S]*";
    else if (c === "?") re += "[\\s\\S]";
    else if (c === "\\" && i + 1 < pattern.length) re += escapeRegex(pattern[++i]!);
    else if (c === "[") {
      const end = findClassEnd(pattern, i);
      if (end < 0) {
        re += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, end);
      let negate = false;
      if (body.startsWith("^")) {
        negate = true;
        body = body.slice(1);
      }
      re += `[${negate ? "^" : ""}${classBody(body)}]`;
      i = end;
    } else re += escapeRegex(c);
  }
  return new RegExp(re + "$");
}

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
