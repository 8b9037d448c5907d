/**
 * Parses the JSON document PG_POLL_SQL returns. A sample, as PostgreSQL 15 printed it (session TimeZone UTC): pid
 * 5975 holds 77 (pg_advisory_xact_lock) in database 5 ("postgres") and is idle in transaction, pid 5976 waits for it.
 *
 *   { "now": "2026-12-01T13:03:56.21057+00:00", "total": 2, "signature": "2:-740810963803565149", "changed": true,
 *     "locks": [
 *       { "database": 5, "objsubid": 1, "shared": false, "granted": false, "classid": null, "objid": [77],
 *         "pid": [5976], "waitstart": ["2026-12-01T13:03:56.179105+00:00"] },
 *       { "database": 5, "objsubid": 1, "shared": false, "granted": true, "classid": null, "objid": [77],
 *         "pid": [5975], "waitstart": null } ],
 *     "databases": [[5, "postgres"]],
 *     "blocking": [ { "pid": 5976, "by": [5975] } ],
 *     "sessions": [
 *       { "pid": 5975, "backendStart": "2026-12-01T13:03:56.163329+00:00", "user": "root", "application": "holderA",
 *         "clientAddr": "127.0.0.1", "clientPort": 56784, "db": "postgres", "state": "idle in transaction",
 *         "xactStart": "2026-12-01T13:03:56.17635+00:00", "queryStart": "2026-12-01T13:03:56.176954+00:00",
 *         "stateChange": "2026-12-01T13:03:56.177479+00:00", "query": "select pg_advisory_xact_lock(77)" }, ... ] }
 *
 * The next poll, sent that signature, got `"changed": false, "locks": null, "databases": null` and the same
 * blocking and sessions. With no advisory lock `locks` is []. Columns of different lengths within a group, or
 * anything else unexpected, are an error naming the field.
 */
import { z } from "zod";

const oid = z.number().int().nonnegative().max(0xffffffff);
const time = z.string().max(64).nullable();
/** One group of lock rows: what its rows share, then one array per column that varies. */
const groupSchema = z.object({
  database: oid,
  objsubid: z.number().int(),
  shared: z.boolean(),
  granted: z.boolean(),
  /** null: every key of the group has classid 0. */
  classid: z.array(oid).nullable(),
  objid: z.array(oid),
  pid: z.array(z.number().int()),
  /** null for holders (no wait). */
  waitstart: z.array(time).nullable(),
});

/** A session's hash (PG_POLL_SQL cuts it to 52 bits, so a JSON number carries it exactly). */
const sessionHash = z
  .number()
  .int()
  .nonnegative()
  .max(2 ** 52);

const sessionRow = z.object({
  pid: z.number().int(),
  /** The row's hash, which the agent sends back so that the server leaves the row out while it is the same. */
  h: sessionHash.optional(),
  backendStart: time,
  user: z.string().nullable(),
  application: z.string().nullable(),
  clientAddr: z.string().nullable(),
  clientPort: z.number().int().nullable(),
  db: z.string().nullable(),
  state: z.string().nullable(),
  xactStart: time,
  queryStart: time,
  stateChange: time,
  query: z.string().nullable(),
});

const snapshotSchema = z.object({
  now: z.string().max(64),
  total: z.number().int().nonnegative(),
  signature: z.string().max(100),
  changed: z.boolean(),
  locks: z.array(groupSchema).nullable(),
  databases: z.array(z.tuple([oid, z.string()])).nullable(),
  blocking: z.array(z.object({ pid: z.number().int(), by: z.array(z.number().int()).nullable() })),
  /**
   * Of the session hashes the agent sent, those no backend has now (the session ran something, changed state or
   * ended); null or absent when it sent none (`sessions` then holds every involved session in full).
   */
  sessionsGone: z.array(sessionHash).nullable().optional(),
  sessions: z.array(sessionRow),
});

/** One pg_locks row of an advisory lock, with its database's name. */
export interface PgLockRow {
  db: string | null;
  classid: number;
  objid: number;
  objsubid: number;
  mode: "ShareLock" | "ExclusiveLock";
  granted: boolean;
  pid: number;
  waitstart: string | null;
}

export type PgSessionRow = z.output<typeof sessionRow>;

export interface PgSnapshot {
  now: string;
  total: number;
  /** The server's signature of every advisory lock row (count and a sum of row hashes). */
  signature: string;
  /** The lock rows were left out (the signature was the known one) and are the known rows. */
  reused: boolean;
  locks: PgLockRow[];
  blocking: Array<{ pid: number; by: number[] | null }>;
  sessions: PgSessionRow[];
}

/**
 * The lock rows of the previous snapshot, with their signature: the server leaves them out while they are the same.
 * And its session rows by pid, with their hashes: the server leaves out a session whose hash the agent has.
 */
export interface KnownPgLocks {
  signature: string;
  locks: PgLockRow[];
  sessions?: ReadonlyMap<number, PgSessionRow>;
}

/** The hashes of the known session rows, for PG_POLL_SQL's $4 (null: none known, every session is sent). */
export function knownSessionHashes(known: KnownPgLocks | null): number[] | null {
  if (!known?.sessions) return null;
  const out: number[] = [];
  for (const s of known.sessions.values()) if (s.h !== undefined) out.push(s.h);
  return out;
}

/**
 * The involved sessions: the rows sent, and for every other involved pid the known row, unless its hash is among the
 * gone ones. A known row's hash that is not gone is a backend's hash now, and the hash covers the pid, backend start,
 * state and times, so it is that very session, unchanged. An involved pid with neither (its session ended between
 * the server's reads of pg_locks and pg_stat_activity) has no row, as in a full read. A gone hash the agent never
 * sent, or hashes left out when it sent none, cannot come from this agent's $4: an error, never a guess.
 */
function mergeSessions(
  sent: PgSessionRow[],
  gone: number[] | null | undefined,
  involved: ReadonlySet<number>,
  known: KnownPgLocks | null,
): PgSessionRow[] {
  if (gone === null || gone === undefined) return sent;
  if (!known?.sessions) {
    throw new Error("unexpected pg_locks snapshot: session rows left out, but the agent sent no session hashes");
  }
  const knownHashes = new Set<number>();
  for (const row of known.sessions.values()) if (row.h !== undefined) knownHashes.add(row.h);
  for (const h of gone) {
    if (!knownHashes.has(h)) {
      throw new Error(`unexpected pg_locks snapshot at sessionsGone: hash ${h} is not a known one`);
    }
  }
  const goneSet = new Set(gone);
  const out = sent.slice();
  const have = new Set(sent.map((s) => s.pid));
  for (const pid of involved) {
    if (have.has(pid)) continue;
    const row = known.sessions.get(pid);
    if (row?.h !== undefined && !goneSet.has(row.h)) out.push(row);
  }
  return out;
}

function involvedPids(locks: PgLockRow[], blocking: Array<{ pid: number; by: number[] | null }>): Set<number> {
  const pids = new Set<number>();
  for (const l of locks) pids.add(l.pid);
  for (const b of blocking) {
    pids.add(b.pid);
    for (const p of b.by ?? []) pids.add(p);
  }
  return pids;
}

export function parsePgSnapshot(input: unknown, known: KnownPgLocks | null = null): PgSnapshot {
  const r = snapshotSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(
      `unexpected pg_locks snapshot at ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
    );
  }
  const { locks: c, databases, changed, sessionsGone, sessions: sent, ...rest } = r.data;
  if (!changed) {
    // Only the signature the agent sent can make the server leave the rows out; anything else is not this agent's.
    if (known === null || known.signature !== rest.signature) {
      throw new Error(
        `unexpected pg_locks snapshot: lock rows left out, but signature ${rest.signature} is not the known one`,
      );
    }
    const sessions = mergeSessions(sent, sessionsGone, involvedPids(known.locks, rest.blocking), known);
    return { ...rest, sessions, reused: true, locks: known.locks };
  }
  const names = new Map(databases ?? []);
  const locks: PgLockRow[] = [];
  for (const [i, g] of (c ?? []).entries()) {
    const n = g.objid.length;
    for (const [name, col] of [
      ["classid", g.classid],
      ["pid", g.pid],
      ["waitstart", g.waitstart],
    ] as const) {
      if (col !== null && col.length !== n) {
        throw new Error(`unexpected pg_locks snapshot at locks.${i}.${name}: ${col.length} values, not ${n}`);
      }
    }
    const db = names.get(g.database) ?? null;
    const mode = g.shared ? "ShareLock" : "ExclusiveLock";
    for (let j = 0; j < n; j++) {
      locks.push({
        db,
        classid: g.classid?.[j] ?? 0,
        objid: g.objid[j]!,
        objsubid: g.objsubid,
        mode,
        granted: g.granted,
        pid: g.pid[j]!,
        waitstart: g.waitstart?.[j] ?? null,
      });
    }
  }
  const sessions = mergeSessions(sent, sessionsGone, involvedPids(locks, rest.blocking), known);
  return { ...rest, sessions, reused: false, locks };
}

/**
 * An advisory key as the application wrote it. pg_locks splits it: a bigint key k is classid = k >> 32 (high half)
 * and objid = k & 0xffffffff with objsubid 1; the two-int4 form pg_advisory_lock(a, b) is classid = a, objid = b
 * with objsubid 2, both shown unsigned, so negative keys come back as large oids.
 */
export function decodeAdvisoryKey(
  classid: number,
  objid: number,
  objsubid: number,
): { kind: "bigint"; text: string } | { kind: "int4-pair"; text: string } {
  if (objsubid === 2) return { kind: "int4-pair", text: `${classid | 0},${objid | 0}` };
  // Most keys are small and positive: plain arithmetic is exact below 2^53 and much cheaper than BigInt.
  if (classid < 0x200000) return { kind: "bigint", text: String(classid * 0x100000000 + objid) };
  const key = BigInt.asIntN(64, (BigInt(classid) << 32n) | BigInt(objid));
  return { kind: "bigint", text: key.toString() };
}
