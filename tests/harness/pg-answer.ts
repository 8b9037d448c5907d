/**
 * A fake PostgreSQL server's answer to PG_POLL_SQL for unit tests: given the lock rows and sessions "on the server" and
 * what the agent asked (its signatures and session hashes), it answers as the statement does: the buckets asked for
 * while the whole table's signature is the agent's, else every bucket whose signature differs; the sessions whose hash
 * the agent lacks, and its hashes that are gone. Its row hashes are its own (a string hash), not the server's.
 */
import { PG_LOCK_BUCKETS, pgLockBucket } from "../../agent/sources/postgres/pg-poll-sql";
import type { PgPollAsk, PgSessionRow } from "../../agent/sources/postgres/pg-snapshot";

export interface FakePgRow {
  database?: number;
  classid?: number;
  objid: number;
  objsubid?: number;
  shared?: boolean;
  granted?: boolean;
  pid: number;
  waitstart?: string | null;
}

export interface FakePgServer {
  now?: string;
  rows: FakePgRow[];
  databases?: Array<[number, string]>;
  blocking?: Array<{ pid: number; by: number[] | null }>;
  /** Every backend's row; a row without h gets one from its content. */
  sessions: PgSessionRow[];
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h | 0;
}

const full = (r: FakePgRow) => ({
  database: 5,
  classid: 0,
  objsubid: 1,
  shared: false,
  granted: true,
  waitstart: null,
  ...r,
});

/** The answer to `ask` (null: a first poll, everything) of a server in state `s`. */
export function pgAnswer(s: FakePgServer, ask: PgPollAsk | null): unknown {
  const rows = s.rows.map(full);
  const sig = (rs: typeof rows) => `${rs.length}:${rs.reduce((x, r) => x ^ hash(JSON.stringify(r)), 0)}`;
  const signature = sig(rows);
  const changed = signature !== ask?.signature;
  const byBucket = new Map<number, typeof rows>();
  for (const r of rows) {
    const b = pgLockBucket(r.classid, r.objid);
    byBucket.set(b, [...(byBucket.get(b) ?? []), r]);
  }
  const buckets: Array<[number, string]> = [];
  for (let b = 0; b < PG_LOCK_BUCKETS; b++) {
    const asked = ask?.bucketSignatures?.[b] ?? null;
    if (!changed && asked !== null) continue;
    const now = sig(byBucket.get(b) ?? []);
    if (now !== asked) buckets.push([b, now]);
  }
  const sent = buckets.flatMap(([b]) => byBucket.get(b) ?? []);
  const groups = new Map<string, typeof sent>();
  for (const r of sent) {
    const k = JSON.stringify([r.database, r.objsubid, r.shared, r.granted, r.classid === 0]);
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const sessions = s.sessions.map((x) => ({ ...x, h: x.h ?? Math.abs(hash(JSON.stringify(x))) }));
  const known = ask?.sessionHashes ?? null;
  return {
    now: s.now ?? "2026-12-01T10:00:00+00:00",
    total: rows.length,
    signature,
    buckets,
    locks: [...groups.values()].map((g) => ({
      database: g[0]!.database,
      objsubid: g[0]!.objsubid,
      shared: g[0]!.shared,
      granted: g[0]!.granted,
      classid: g[0]!.classid === 0 ? null : g.map((r) => r.classid),
      objid: g.map((r) => r.objid),
      pid: g.map((r) => r.pid),
      waitstart: g[0]!.granted ? null : g.map((r) => r.waitstart),
    })),
    databases: s.databases ?? [[5, "app"]],
    blocking: s.blocking ?? [],
    sessionsGone: known === null ? null : known.filter((h) => !sessions.some((x) => x.h === h)),
    sessions: sessions.filter((x) => known === null || !known.includes(x.h)),
  };
}
