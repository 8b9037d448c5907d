import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * The session-cookie key: SESSION_SECRET when given, else a random one kept (mode 0600) next to the SQLite file so
 * that sessions survive a dashboard restart (with PostgreSQL history, under ./data; several dashboards must share
 * one SESSION_SECRET instead).
 */
export function loadSessionSecret(configured: string | null, databaseUrl: string): Buffer {
  if (configured) return Buffer.from(configured);
  const dbFile = databaseUrl.startsWith("file:") ? databaseUrl.slice("file:".length) : "./data/lockscope.db";
  const dir = path.dirname(path.resolve(dbFile));
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "session-secret");
  try {
    const s = readFileSync(file);
    if (s.length >= 32) return s;
  } catch {
    // not there yet: create it below
  }
  const secret = randomBytes(48);
  writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}
