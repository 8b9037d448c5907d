/** The default history store: an SQLite file under ./data, created on first start. */
export const DEFAULT_DATABASE_URL = "file:./data/lockscope.db";

/** Which engine holds history: the embedded SQLite file (default), or a PostgreSQL server for several dashboards. */
export type DatabaseProvider = "sqlite" | "postgresql";

export interface DatabaseTarget {
  provider: DatabaseProvider;
  url: string;
}

/**
 * Reads DATABASE_URL: a `file:` URL (relative to the working directory) selects SQLite, a `postgresql://` or
 * `postgres://` URL selects PostgreSQL. Anything else is refused with the reason, never guessed at.
 */
export function parseDatabaseUrl(raw: string | undefined): DatabaseTarget {
  const url = raw && raw.trim() !== "" ? raw.trim() : DEFAULT_DATABASE_URL;
  if (url.startsWith("file:")) {
    if (url === "file:") throw new Error("DATABASE_URL file: URL names no file");
    return { provider: "sqlite", url };
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error(`DATABASE_URL is not a valid PostgreSQL URL (got ${JSON.stringify(redact(url))})`);
    }
    if (!parsed.hostname && !parsed.searchParams.get("host")) {
      throw new Error(`DATABASE_URL names no PostgreSQL host (got ${JSON.stringify(redact(url))})`);
    }
    return { provider: "postgresql", url };
  }
  throw new Error(
    `DATABASE_URL must be a file: URL (SQLite) or a postgresql:// URL (got ${JSON.stringify(redact(url).slice(0, 40))})`,
  );
}

/** Normalises DATABASE_URL for the SQLite adapter (the Prisma CLI's config), refusing other providers. */
export function databaseFileUrl(raw: string | undefined): string {
  const target = parseDatabaseUrl(raw);
  if (target.provider !== "sqlite") {
    throw new Error("DATABASE_URL must be a file: URL for the SQLite store (PostgreSQL migrates itself at start)");
  }
  return target.url;
}

/** The URL without its password, for logs and error messages. */
export function redact(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, "$1:***@");
}
