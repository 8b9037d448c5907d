/** The default history store: an SQLite file under ./data, created on first start. */
export const DEFAULT_DATABASE_URL = "file:./data/lockscope.db";

/** Normalises DATABASE_URL for the SQLite adapter, which takes `file:` URLs relative to the working directory. */
export function databaseFileUrl(raw: string | undefined): string {
  const url = raw && raw.trim() !== "" ? raw.trim() : DEFAULT_DATABASE_URL;
  if (!url.startsWith("file:")) {
    throw new Error(`DATABASE_URL must be a file: URL for the SQLite store (got ${JSON.stringify(url.slice(0, 40))})`);
  }
  return url;
}
