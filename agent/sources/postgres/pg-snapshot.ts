/**
 * Parses the JSON document PG_POLL_SQL returns, and merges it into what the agent had. A sample, as PostgreSQL 15
 * printed it (session TimeZone UTC) to a first poll, cut down to two sessions and their rows (5,021 other rows of a
 * bench were on the server, hence the counts): pid 544 holds 77 (pg_advisory_xact_lock) in database 5 ("postgres")
 * and is idle in transaction, pid 545 waits for it; key 77 is in bucket 77.
 *
 *   { "now": "2026-12-01T23:04:13.777039+00:00", "total": 5023, "signature": "5023:4373987419645275313",
 *     "buckets": [[0, "39:-6939551136655369540"], ..., [77, "41:1041774442566668157"], ...], (all 127)
 *     "locks": [
 *       { "database": 5, "objsubid": 1, "shared": false, "granted": false, "classid": null, "objid": [77],
 *         "pid": [545], "waitstart": ["2026-12-01T23:04:13.443253+00:00"] },
 *       { "database": 5, "objsubid": 1, "shared": false, "granted": true, "classid": null, "objid": [77],
 *         "pid": [544], "waitstart": null }, ... ],
 *     "databases": [[5, "postgres"], ...],
 *     "blocking": [ { "pid": 545, "by": [544] }, ... ],
 *     "sessionsGone": null,
 *     "sessions": [
 *       { "pid": 544, "h": 2970174935774072, "backendStart": "2026-12-01T23:04:13.431415+00:00", "user": "root",
 *         "application": "holderA", "clientAddr": "127.0.0.1", "clientPort": 48484, "db": "postgres",
 *         "state": "idle in transaction", "xactStart": "2026-12-01T23:04:13.440397+00:00",
 *         "queryStart": "2026-12-01T23:04:13.441331+00:00", "stateChange": "2026-12-01T23:04:13.441854+00:00",
 *         "query": "select pg_advisory_xact_lock(77)" }, ... ] }
 *
 * A next poll that sends those signatures gets `"buckets": []` (or the one bucket it asked for again, with its rows),
 * `"locks": []`, `"databases": []`, the blocking, `"sessionsGone": []` and `"sessions": []` while nothing changed.
 * Columns of different lengths within a group, or anything else unexpected, are an error naming the field.
 */
import { z } from "zod";
import { PG_LOCK_BUCKETS, pgLockBucket } from "./pg-poll-sql";

const oid = z.number().int().nonnegative().max(0xffffffff);
const time = z.string().max(64).nullable();
const bucket = z
  .number()
  .int()
  .nonnegative()
  .max(PG_LOCK_BUCKETS - 1);
/** A signature of lock rows: their count and the XOR of their 64-bit hashes. */
const signature = z
  .string()
  .max(64)
  .regex(/^\d+:-?\d+$/, "not a count:xor signature");
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
  /** Of every advisory row: when it is the one the agent sent, only the buckets it asked for are sent. */
  signature,
  /** The buckets whose signature is not the one the agent sent, with their signature now; their rows are in locks. */
  buckets: z.array(z.tuple([bucket, signature])).max(PG_LOCK_BUCKETS),
  locks: z.array(groupSchema),
  databases: z.array(z.tuple([oid, z.string()])),
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

/** One bucket of the agent's view of the lock table: the server's signature of its rows, and the rows. */
export interface PgBucket {
  /** null: its rows were cut short (more than DB_MAX_LOCKS were sent), so the next poll asks for it again. */
  signature: string | null;
  rows: readonly PgLockRow[];
}

export interface PgSnapshot {
  now: string;
  /** Advisory lock rows on the server (all of them, not only the rows read). */
  total: number;
  /** The server's signature of every advisory lock row; null when the agent's buckets are not all known in full. */
  signature: string | null;
  /** PG_LOCK_BUCKETS buckets: those the server sent are new objects, the others the very ones the agent had. */
  buckets: readonly PgBucket[];
  /** How many buckets the server sent (their signature differed from the agent's, or the agent asked for them). */
  bucketsSent: number;
  /** Every bucket's rows. */
  locks: PgLockRow[];
  blocking: Array<{ pid: number; by: number[] | null }>;
  sessions: PgSessionRow[];
}

/**
 * The agent's view after a poll: the lock rows by bucket with their signatures (the server sends a bucket only when
 * its signature differs), and the session rows by pid with their hashes (the server leaves out a session whose hash
 * the agent has).
 */
export interface KnownPgLocks {
  /** Of all the rows (null: some bucket is not known in full): while it is the server's, no bucket is compared. */
  signature: string | null;
  buckets: readonly PgBucket[];
  sessions?: ReadonlyMap<number, PgSessionRow>;
}

/**
 * What one poll sends: PG_POLL_SQL's $3 (the signature of all the rows), $6 (a signature per bucket; null: send that
 * bucket; all null: send every bucket), $4 (null: every session) and $7 (the pids of the rows the agent has: with $4,
 * the server sends an unknown session's row if its pid is one of them, in a bucket sent, or in a blocking chain).
 */
export interface PgPollAsk {
  signature: string | null;
  bucketSignatures: Array<string | null> | null;
  sessionHashes: number[] | null;
  sessionPids: number[] | null;
}

/**
 * Sessions are read again in turn: each poll leaves out the known hashes of the sessions whose pid is its slot modulo
 * this, so each known session row is sent again at least every PG_SESSION_SLICES polls.
 */
export const PG_SESSION_SLICES = 64;

/**
 * The ask for a poll from what the agent knows (null: everything). With a slot (the poll's number), it also asks
 * again for one bucket (slot modulo PG_LOCK_BUCKETS) and one slice of the sessions whatever their signatures say:
 * every row is then read in full again within PG_LOCK_BUCKETS polls, a little each poll, instead of all at once.
 */
export function pgPollAsk(known: KnownPgLocks | null, slot: number | null = null): PgPollAsk {
  if (known === null) return { signature: null, bucketSignatures: null, sessionHashes: null, sessionPids: null };
  const { signature } = known;
  const bucketSignatures = known.buckets.map((b) => b.signature);
  if (slot !== null) bucketSignatures[slot % PG_LOCK_BUCKETS] = null;
  if (!known.sessions) return { signature, bucketSignatures, sessionHashes: null, sessionPids: null };
  const sessionHashes: number[] = [];
  const skip = slot === null ? -1 : slot % PG_SESSION_SLICES;
  for (const s of known.sessions.values())
    if (s.h !== undefined && s.pid % PG_SESSION_SLICES !== skip) sessionHashes.push(s.h);
  // Every pid of the rows kept, a bucket asked for again included (its rows may come back unchanged).
  const pids = new Set<number>();
  for (const b of known.buckets) for (const r of b.rows) pids.add(r.pid);
  return { signature, bucketSignatures, sessionHashes, sessionPids: [...pids] };
}

/**
 * The involved sessions: the rows sent, and for every other involved pid the known row, if the agent sent its hash
 * and the server did not say it is gone. A known row's hash that is not gone is a backend's hash now, and the hash
 * covers the pid, backend start, state and times, so it is that very session, unchanged. An involved pid with neither
 * (its session ended between the server's reads of pg_locks and pg_stat_activity) has no row, as in a full read. A
 * gone hash the agent never sent, or hashes left out when it sent none, cannot come from this agent's $4: an error,
 * never a guess.
 */
function mergeSessions(
  sent: PgSessionRow[],
  gone: number[] | null | undefined,
  involved: ReadonlySet<number>,
  known: KnownPgLocks | null,
  asked: number[] | null,
): PgSessionRow[] {
  if (gone === null || gone === undefined) {
    if (asked !== null) throw new Error("unexpected pg_locks snapshot: session hashes sent, but no sessionsGone");
    return sent;
  }
  if (asked === null || !known?.sessions) {
    throw new Error("unexpected pg_locks snapshot: session rows left out, but the agent sent no session hashes");
  }
  const askedSet = new Set(asked);
  for (const h of gone) {
    if (!askedSet.has(h)) throw new Error(`unexpected pg_locks snapshot at sessionsGone: hash ${h} is not a known one`);
  }
  const goneSet = new Set(gone);
  const out = sent.slice();
  const have = new Set(sent.map((s) => s.pid));
  for (const pid of involved) {
    if (have.has(pid)) continue;
    const row = known.sessions.get(pid);
    if (row?.h !== undefined && askedSet.has(row.h) && !goneSet.has(row.h)) out.push(row);
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

const bad = (what: string) => new Error(`unexpected pg_locks snapshot${what}`);

/**
 * The buckets after this answer: a bucket sent replaces the agent's (its rows, possibly none: every lock in it is
 * gone), the others are kept. Refused, as not this agent's answer: a bucket sent twice, or with the signature the
 * agent sent; a bucket the agent asked for (no signature) missing; rows of a bucket not sent; a bucket with more rows
 * than its signature counts, or fewer unless the server's LIMIT (DB_MAX_LOCKS) cut the rows; bucket counts that do not
 * add up to the server's total.
 */
function mergeBuckets(
  data: z.output<typeof snapshotSchema>,
  known: KnownPgLocks | null,
  ask: PgPollAsk,
  maxLocks: number,
): { buckets: PgBucket[]; sent: number } {
  const asked = ask.bucketSignatures;
  // The lock table's signature is the agent's: the server compared no bucket, and sent only those asked for.
  const same = ask.signature !== null && ask.signature === data.signature;
  const sigs = new Map<number, string>();
  for (const [i, [b, sig]] of data.buckets.entries()) {
    if (sigs.has(b)) throw bad(` at buckets.${i}: bucket ${b} sent twice`);
    if (asked?.[b] === sig) throw bad(` at buckets.${i}: bucket ${b} sent with the signature the agent has`);
    if (same && asked?.[b] != null) throw bad(` at buckets.${i}: bucket ${b} sent, but the signature is the agent's`);
    sigs.set(b, sig);
  }
  const rows = new Map<number, PgLockRow[]>([...sigs.keys()].map((b) => [b, []]));
  const names = new Map(data.databases);
  let sentRows = 0;
  for (const [i, g] of data.locks.entries()) {
    const n = g.objid.length;
    for (const [name, col] of [
      ["classid", g.classid],
      ["pid", g.pid],
      ["waitstart", g.waitstart],
    ] as const) {
      if (col !== null && col.length !== n) throw bad(` at locks.${i}.${name}: ${col.length} values, not ${n}`);
    }
    const db = names.get(g.database) ?? null;
    const mode = g.shared ? "ShareLock" : "ExclusiveLock";
    for (let j = 0; j < n; j++) {
      const classid = g.classid?.[j] ?? 0;
      const objid = g.objid[j]!;
      const b = pgLockBucket(classid, objid);
      const into = rows.get(b);
      if (!into) throw bad(` at locks.${i}.objid.${j}: a row of bucket ${b}, which was not sent`);
      into.push({
        db,
        classid,
        objid,
        objsubid: g.objsubid,
        mode,
        granted: g.granted,
        pid: g.pid[j]!,
        waitstart: g.waitstart?.[j] ?? null,
      });
    }
    sentRows += n;
  }
  const buckets: PgBucket[] = [];
  let count = 0;
  let cut = false;
  for (let b = 0; b < PG_LOCK_BUCKETS; b++) {
    const sig = sigs.get(b);
    if (sig === undefined) {
      const kept = asked?.[b] != null ? known?.buckets[b] : undefined;
      if (!kept) throw bad(`: bucket ${b} was asked for but not sent`);
      buckets.push(kept);
      count += kept.rows.length;
      continue;
    }
    const n = Number(sig.slice(0, sig.indexOf(":")));
    const r = rows.get(b)!;
    if (r.length > n) throw bad(` at bucket ${b}: ${r.length} rows, but its signature counts ${n}`);
    cut ||= r.length < n;
    count += n;
    buckets.push({ signature: r.length === n ? sig : null, rows: r });
  }
  if (cut && sentRows < maxLocks) throw bad(`: rows of a bucket missing, though fewer than DB_MAX_LOCKS were sent`);
  if (count !== data.total) throw bad(`: the buckets count ${count} rows, not the total ${data.total}`);
  return { buckets, sent: sigs.size };
}

/**
 * One answer to PG_POLL_SQL, merged into what the agent knew when it asked (`known`, and `ask`, what it sent:
 * pgPollAsk(known) unless given). `maxLocks` is the LIMIT it sent ($1). Anything unexpected is an error naming
 * the field; the source then asks for everything at its next poll.
 */
export function parsePgSnapshot(
  input: unknown,
  known: KnownPgLocks | null = null,
  ask: PgPollAsk = pgPollAsk(known),
  maxLocks = Infinity,
): PgSnapshot {
  const r = snapshotSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw bad(` at ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const { now, total, blocking } = r.data;
  const { buckets, sent } = mergeBuckets(r.data, known, ask, maxLocks);
  const locks = buckets.flatMap((b) => b.rows);
  const sessions = mergeSessions(
    r.data.sessions,
    r.data.sessionsGone,
    involvedPids(locks, blocking),
    known,
    ask.sessionHashes,
  );
  // Kept only while every bucket is known in full: a bucket cut short must be compared again.
  const signature = buckets.every((b) => b.signature !== null) ? r.data.signature : null;
  return { now, total, signature, buckets, bucketsSent: sent, locks, blocking, sessions };
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
