/**
 * Parses the JSON document PG_POLL_SQL returns. A sample, as PostgreSQL 15 printed it (session TimeZone UTC): pid
 * 21308 holds 42 in database 16384 ("test"), pid 21309 waits for it.
 *
 *   { "now": "2026-12-01T09:29:20.914147+00:00", "total": 2,
 *     "locks": { "database": [16384, 16384], "classid": [0, 0], "objid": [42, 42], "objsubid": [1, 1],
 *                "shared": [false, false], "granted": [true, false], "pid": [21308, 21309],
 *                "waitstart": [null, "2026-12-01T09:29:20.599609+00:00"] },
 *     "databases": [[16384, "test"]],
 *     "blocking": [ { "pid": 21309, "by": [21308] } ],
 *     "sessions": [
 *       { "pid": 21308, "backendStart": "2026-12-01T09:29:20.547159+00:00", "user": "root", "application": "holderA",
 *         "clientAddr": "127.0.0.1", "clientPort": 33212, "db": "test", "state": "idle in transaction",
 *         "xactStart": "2026-12-01T09:29:20.58659+00:00", "queryStart": "2026-12-01T09:29:20.590722+00:00",
 *         "stateChange": "2026-12-01T09:29:20.590868+00:00", "query": "select pg_advisory_xact_lock(77)" } ] }
 *
 * With no advisory lock every column is null. Columns of different lengths, or anything else unexpected, are an
 * error naming the field.
 */
import { z } from "zod";

const oid = z.number().int().nonnegative().max(0xffffffff);
const time = z.string().max(64).nullable();
/** array_agg over no rows is NULL: an empty column. */
const column = <T extends z.ZodTypeAny>(item: T) =>
  z
    .array(item)
    .nullable()
    .transform((v) => v ?? []);

const locksSchema = z.object({
  database: column(oid),
  classid: column(oid),
  objid: column(oid),
  objsubid: column(z.number().int()),
  shared: column(z.boolean()),
  granted: column(z.boolean()),
  pid: column(z.number().int()),
  waitstart: column(time),
});

const sessionRow = z.object({
  pid: z.number().int(),
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
  locks: locksSchema.nullable(),
  databases: z.array(z.tuple([oid, z.string()])).nullable(),
  blocking: z.array(z.object({ pid: z.number().int(), by: z.array(z.number().int()).nullable() })),
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

/** The lock rows of the previous snapshot, with their signature: the server leaves them out while they are the same. */
export interface KnownPgLocks {
  signature: string;
  locks: PgLockRow[];
}

export function parsePgSnapshot(input: unknown, known: KnownPgLocks | null = null): PgSnapshot {
  const r = snapshotSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(
      `unexpected pg_locks snapshot at ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
    );
  }
  const { locks: c, databases, changed, ...rest } = r.data;
  if (!changed) {
    // Only the signature the agent sent can make the server leave the rows out; anything else is not this agent's.
    if (known === null || known.signature !== rest.signature) {
      throw new Error(
        `unexpected pg_locks snapshot: lock rows left out, but signature ${rest.signature} is not the known one`,
      );
    }
    return { ...rest, reused: true, locks: known.locks };
  }
  const names = new Map(databases ?? []);
  const n = c?.pid.length ?? 0;
  const locks: PgLockRow[] = new Array<PgLockRow>(n);
  if (c) {
    for (const [name, col] of Object.entries(c)) {
      if (col.length !== n) {
        throw new Error(`unexpected pg_locks snapshot at locks.${name}: ${col.length} values, not ${n}`);
      }
    }
    for (let i = 0; i < n; i++) {
      locks[i] = {
        db: names.get(c.database[i]!) ?? null,
        classid: c.classid[i]!,
        objid: c.objid[i]!,
        objsubid: c.objsubid[i]!,
        mode: c.shared[i] ? "ShareLock" : "ExclusiveLock",
        granted: c.granted[i]!,
        pid: c.pid[i]!,
        waitstart: c.waitstart[i]!,
      };
    }
  }
  return { ...rest, reused: false, locks };
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
