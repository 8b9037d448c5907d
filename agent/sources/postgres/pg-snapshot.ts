/**
 * Parses the JSON document PG_POLL_SQL returns. A sample, as PostgreSQL 15 printed it (session TimeZone UTC):
 *
 *   { "now": "2026-12-01T09:29:20.914147+00:00", "total": 2,
 *     "locks": [
 *       { "db": "test", "classid": "0", "objid": "42", "objsubid": 1, "mode": "ExclusiveLock", "granted": true,
 *         "pid": 21308, "vxid": "2/20", "waitstart": null },
 *       { "db": "test", "classid": "0", "objid": "42", "objsubid": 1, "mode": "ExclusiveLock", "granted": false,
 *         "pid": 21309, "vxid": "3/2", "waitstart": "2026-12-01T09:29:20.599609+00:00" } ],
 *     "blocking": [ { "pid": 21309, "by": [21308] } ],
 *     "sessions": [
 *       { "pid": 21308, "backendStart": "2026-12-01T09:29:20.547159+00:00", "user": "root", "application": "holderA",
 *         "clientAddr": "127.0.0.1", "clientPort": 33212, "db": "test", "state": "idle in transaction",
 *         "xactStart": "2026-12-01T09:29:20.58659+00:00", "queryStart": "2026-12-01T09:29:20.590722+00:00",
 *         "stateChange": "2026-12-01T09:29:20.590868+00:00", "backendXid": null,
 *         "query": "select pg_advisory_xact_lock(77)" } ] }
 *
 * oid columns (classid, objid) arrive as strings; anything else unexpected is an error naming the field.
 */
import { z } from "zod";

const oid = z.union([z.string().regex(/^\d{1,10}$/), z.number().int().nonnegative()]).transform(Number);
const time = z.string().max(64).nullable();

const lockRow = z.object({
  db: z.string().nullable(),
  classid: oid,
  objid: oid,
  objsubid: z.number().int(),
  mode: z.string().max(64),
  granted: z.boolean(),
  pid: z.number().int(),
  vxid: z.string().max(64).nullable(),
  waitstart: time,
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
  backendXid: z.union([z.string(), z.number()]).nullable(),
  query: z.string().nullable(),
});

const snapshotSchema = z.object({
  now: z.string().max(64),
  total: z.number().int().nonnegative(),
  locks: z.array(lockRow),
  blocking: z.array(z.object({ pid: z.number().int(), by: z.array(z.number().int()).nullable() })),
  sessions: z.array(sessionRow),
});

export type PgLockRow = z.output<typeof lockRow>;
export type PgSessionRow = z.output<typeof sessionRow>;
export type PgSnapshot = z.output<typeof snapshotSchema>;

export function parsePgSnapshot(input: unknown): PgSnapshot {
  const r = snapshotSchema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new Error(
    `unexpected pg_locks snapshot at ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
  );
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
  const key = BigInt.asIntN(64, (BigInt(classid) << 32n) | BigInt(objid));
  return { kind: "bigint", text: key.toString() };
}
