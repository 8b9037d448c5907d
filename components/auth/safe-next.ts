/**
 * Where to send the browser after sign-in: `next` when it resolves to this origin, else the home page. Parsed the
 * way the browser will follow it (new URL against the origin), not by looking at its first characters: browsers
 * read `\` as `/` and drop tabs and newlines, so `/\evil.example` and `/<tab>/evil.example` are other sites. The
 * answer is the absolute URL, since a same-origin path such as `/.//evil.example` normalises to `//evil.example`.
 */
export function safeNext(next: string | null | undefined, origin: string): string {
  const home = `${origin}/`;
  if (typeof next !== "string" || !next.startsWith("/")) return home;
  let url: URL;
  try {
    url = new URL(next, origin);
  } catch {
    return home;
  }
  return url.origin === origin ? url.href : home;
}
