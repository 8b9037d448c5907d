/**
 * The one statement a poll runs against a PostgreSQL server (a constant, not a file, so a bundled agent carries it):
 * every advisory lock (held and awaited, all databases), who blocks each waiting session, and the sessions involved.
 * $1 = at most this many advisory lock rows; $2 = cut query text at this many characters; $3 = the signature of all
 * the lock rows the agent has (null: compare every bucket); $4 = the hashes of the session rows the agent already has
 * (an int8 array; null: send every session involved); $5 = send every session's query text (SHOW_QUERIES=on);
 * $6 = the signature of each bucket of lock rows the agent has (PG_LOCK_BUCKETS entries; a null entry, or a null
 * array: send that bucket, or every bucket); $7 = the pids of the lock rows the agent has (an int4 array; null with
 * $4 null).
 *
 * Read-only, and it takes no advisory or row lock: pg_locks and pg_stat_activity read shared memory; the only locks
 * are ACCESS SHARE on the catalog it reads, and the session's lock_timeout keeps even that from ever queueing
 * behind an ACCESS EXCLUSIVE. pg_blocking_pids (which briefly locks the whole lock manager) is called only along the
 * chains that start at an advisory waiter: from each such waiter to its blockers, and on from those that are
 * themselves waiting, whatever they wait for (a row, a table), up to the root. UNION drops a row already seen, so a
 * cycle ends the recursion.
 *
 * The lock rows come by bucket: a row's bucket is (16 * classid + objid) mod 127, of the key alone, so every row of
 * a key is in one bucket, and the agent computes it from each row it gets (pgLockBucket). A signature of some rows is
 * their count and the XOR of a 64-bit hash of each row (every column the agent reads: key, database, mode, granted,
 * pid, and a waiter's waitstart); the rows are distinct (one per key, database, pid and mode), so no two cancel out.
 * The statement computes the signature of all the advisory rows first. When it is $3 (the lock table as the agent
 * has it) it compares no bucket and sends only the buckets the agent asked for ($6's null entries: one in turn each
 * poll); else it computes each bucket's signature and sends every bucket whose signature is not the agent's. A sent
 * bucket comes with its signature and all its rows (none: every lock in it is gone); the agent keeps the others. So
 * a poll after one lock change sends that key's bucket, about 1/127 of the rows, instead of all 5,000: turning the
 * rows into JSON was most of a changed poll's cost, reading them is not. Any row that differs (a holder swap with
 * equal counts, a waiter granted, a new wait) changes its bucket's and the table's signature unless two 64-bit XORs
 * collide (about 1 in 2^64 per change), and the agent asks for each bucket again in turn anyway. All signatures come
 * from the one read of pg_locks, so nothing can change between them and the rows. A reused pid with the same rows is
 * caught by the sessions.
 *
 * The row hash is hashint4extended of (pid << 4 | objsubid << 2 | mode | granted), 26 bits, seeded with the 64 bits
 * (classid xor database) << 32 | objid: nothing is folded (hashint8extended hashes the XOR of a bigint's two halves,
 * so the hash before this one, of the key, gave (1,3) and (2,0) the same value). classid is xored with the database
 * only: rows of one pid are in one database, so two distinct rows can only share an input through a pid reused in
 * another database between polls. No term is ever NULL (a waiter's waitstart is NULL for a moment before its wait
 * begins), so no row drops out of the XOR.
 *
 * The sessions come the same way, one by one: every backend in pg_stat_activity gets a hash of what the agent reads
 * from its row and what can change (pid, backend_start, application_name, state, xact_start, query_start,
 * state_change: a new statement, a new state or a new session with a reused pid changes one of them; the query text
 * changes only with query_start), cut to 52 bits so that JSON carries it exactly. `sessions` holds the full rows only
 * of the sessions involved (the lock rows' pids and the blocking chains) whose hash is not among the agent's ($4),
 * and `sessionsGone` those of the agent's hashes that no backend has now (null when $4 is null): a known row whose
 * hash is not gone is, hash collisions aside, that session unchanged, and a known session that ended is gone. Each
 * backend's pid and hash used to come every poll instead (`sessionKeys`): 23 KB at 1,000 sessions, and a JSON array
 * built over every backend; the gone hashes are usually none.
 *
 * The backends are read from pg_stat_get_activity(NULL), what pg_stat_activity is a view of, without the view's joins
 * to pg_database and pg_authid: the user and database names are looked up only for the rows sent. One hash full join
 * of the backends with the agent's hashes ($4, the hashed side) gives both what is unknown (a backend whose hash the
 * agent does not have) and what is gone (a hash of the agent's that no backend has), and only those rows are kept
 * (`ses`: about 20 of 1,006 at 1,000 sessions in a steady state), instead of materializing every backend's row and
 * hashing the backends twice (an anti join for the gone hashes, NOT IN for the unknown ones). The subquery is fenced
 * (OFFSET 0) so that the row hash is computed once per backend, not again in the join's filter.
 *
 * An unknown backend is involved when its pid is in a lock row the agent has ($7), in a row of a bucket sent (`cand`),
 * or in a blocking chain, and only then is its row sent. That covers every lock row: a bucket not sent has the
 * signature of the agent's, so (collisions aside, as everywhere here) its rows are the agent's, pids included. A pid
 * of $7 whose backend holds nothing now is sent needlessly, once, and is harmless. This replaced a hash of all 5,000
 * rows' pids built by another pass over them (that part, with the rows' JSON, measured 0.8 ms), and then a lookup of
 * each row's pid among the unknown backends in the signature's pass (0.3 to 0.4 ms more than this, every case).
 *
 * The blocking chain's pids are folded into one array first: the planner estimates a recursive CTE at 7,010 rows and
 * sized the hashed lookups over it from that (70,100 entries, allocated and cleared every poll; about 4 ms of a full
 * poll).
 * pg_locks is still read before pg_stat_activity: the lock rows are taken in full at the first row of `sig`, and
 * `ses` is first read after it.
 *
 * Only one pass over the 5,000 rows (the signature) is made in every poll; the others are made only when needed.
 * `bsig` (each bucket's signature) is gated on the table's signature having changed: its condition holds no column,
 * so the planner makes it a one-time filter and an unchanged poll never groups the rows. The buckets to send are a
 * bool per bucket (`pickb`), looked up by index in the one pass that keeps the rows to send (`cand`); the rows of an
 * asked-for bucket are read once, and its signature is computed from them. The groups (`g`) feed both the lock JSON
 * and the database names, so the rows sent are copied once.
 *
 * The agent runs this as a named prepared statement with a generic plan (pg-client.ts): parsing, analysing and
 * planning this statement was about 1.1 ms of every poll (a profile of the server backend: parse 0.2, analyse 0.25,
 * plan 0.6, at 1,000 sessions). The shape is built for that plan: nothing in it needs the parameters' values to be
 * planned well (the per-bucket lookups are arrays, the gated parts one-time filters), and the hashed lookups stay
 * subplans (they sit under OR, which the planner does not turn into joins; an IN at the top of that WHERE became a
 * nested loop over all 1,006 backends and 5,000 pids, 350 ms a poll, in a trial).
 *
 * The query text comes only with $5 (SHOW_QUERIES=on) or while the session is inside a transaction, the one case in
 * which the agent reads it (to tell a pg_advisory_xact_lock holder); the hash covers xact_start, so a session entering
 * a transaction is sent again, with its text.
 *
 * Output: one row, one json column `snapshot`: { now, total, signature, buckets: [[bucket, signature]],
 * locks: [group], databases: [[oid, name]], blocking: [...], sessionsGone: [h] | null, sessions: [...] }: the locks
 * and database names of the buckets sent only. The locks come grouped by what most rows share
 * (database, objsubid, mode, granted, and whether the key's high half is 0), each group one array per column, and a
 * column a group does not need is null: classid when every key is below 2^32, waitstart for holders. Building one JSON
 * object per lock cost about 17 ms of server CPU per poll at 5,000 locks, one array per column about 5 ms, and the
 * groups leave out five of the eight columns for the usual lock (measured: 19-22 ms against 27 ms in full, at load
 * average 7.6, where the figures are about twice those at load 2.5).
 */
/**
 * How many buckets the advisory rows are spread over: a row's bucket is (16 * classid + objid) mod 127, of the key
 * alone, so every row of one key (in every database, holder or waiter) is in the same bucket, and the agent computes
 * it from the row as the server does (pgLockBucket). 127 is prime, so keys in any stride but 127 spread evenly.
 */
export const PG_LOCK_BUCKETS = 127;

/** A lock row's bucket, as PG_POLL_SQL computes it: exact in a double (16 * classid + objid is below 2^37). */
export function pgLockBucket(classid: number, objid: number): number {
  return (classid * 16 + objid) % PG_LOCK_BUCKETS;
}

export const PG_POLL_SQL = `
WITH RECURSIVE l AS MATERIALIZED (
  SELECT pid, granted, locktype = 'advisory' AS adv,
    ((classid::int8 * 16 + objid::int8) % ${PG_LOCK_BUCKETS})::int4 AS b,
    pg_catalog.hashint4extended((pid << 4) | (objsubid << 2)
        | CASE WHEN mode = 'ShareLock' THEN 2 ELSE 0 END | CASE WHEN granted THEN 1 ELSE 0 END,
      ((classid::int8 # COALESCE(database, 0)::int8) << 32) | objid::int8)
    # CASE WHEN granted THEN 0 ELSE COALESCE(pg_catalog.hashtextextended(waitstart::text, 0), 1) END AS h,
    database, classid, objid, objsubid, mode = 'ShareLock' AS shared, waitstart
  FROM pg_catalog.pg_locks
  WHERE pid IS NOT NULL AND (locktype = 'advisory' OR NOT granted)
),
sig AS MATERIALIZED (
  SELECT s.*, s.signature IS DISTINCT FROM $3::text AS changed
  FROM (SELECT count(*) FILTER (WHERE adv) AS total,
      count(*) FILTER (WHERE adv) || ':' || COALESCE(bit_xor(h) FILTER (WHERE adv), 0) AS signature,
      array_agg(pid) FILTER (WHERE adv AND NOT granted) AS advw,
      array_agg(pid) FILTER (WHERE NOT granted) AS waiting
    FROM l) s
),
bsig AS MATERIALIZED (
  SELECT b, count(*) || ':' || bit_xor(h) AS sig FROM l WHERE (SELECT changed FROM sig) AND adv GROUP BY b
),
pickb AS MATERIALIZED (
  SELECT array_agg(CASE WHEN (SELECT changed FROM sig)
      THEN COALESCE(s.sig, '0:0') IS DISTINCT FROM ($6::text[])[k.b + 1]
      ELSE ($6::text[])[k.b + 1] IS NULL END ORDER BY k.b) AS sent
  FROM generate_series(0, ${PG_LOCK_BUCKETS - 1}) AS k(b) LEFT JOIN bsig s ON s.b = k.b
),
cand AS MATERIALIZED (
  SELECT * FROM l WHERE adv AND (SELECT sent FROM pickb)[b + 1]
),
pick AS (
  SELECT k.b, COALESCE(s.sig, '0:0') AS sig
  FROM generate_series(0, ${PG_LOCK_BUCKETS - 1}) AS k(b) LEFT JOIN bsig s ON s.b = k.b
  WHERE (SELECT changed FROM sig) AND (SELECT sent FROM pickb)[k.b + 1]
  UNION ALL
  SELECT k.b, COALESCE(c.sig, '0:0') AS sig
  FROM generate_series(0, ${PG_LOCK_BUCKETS - 1}) AS k(b)
  LEFT JOIN (SELECT b, count(*) || ':' || bit_xor(h) AS sig FROM cand GROUP BY b) c ON c.b = k.b
  WHERE NOT (SELECT changed FROM sig) AND (SELECT sent FROM pickb)[k.b + 1]
),
g AS MATERIALIZED (
  SELECT database::int8 AS database, objsubid, shared, granted,
    array_agg(classid::int8) FILTER (WHERE classid <> 0) AS classid, array_agg(objid::int8) AS objid,
    array_agg(pid) AS pid, array_agg(waitstart) FILTER (WHERE NOT granted) AS waitstart
  FROM (SELECT * FROM cand LIMIT $1) sent GROUP BY 1, 2, 3, 4, classid = 0
),
blk(pid, blocked_by) AS (
  SELECT w.pid, pg_catalog.pg_blocking_pids(w.pid)
  FROM (SELECT DISTINCT unnest(advw) AS pid FROM sig) w
  UNION
  SELECT b.pid, pg_catalog.pg_blocking_pids(b.pid)
  FROM blk, LATERAL unnest(blk.blocked_by) AS b(pid)
  WHERE b.pid = ANY((SELECT waiting FROM sig)::int4[])
),
blkp AS MATERIALIZED (
  SELECT array_agg(p) AS pids FROM (SELECT pid FROM blk UNION ALL SELECT unnest(blocked_by) FROM blk) AS x(p)
),
ses AS MATERIALIZED (
  SELECT a.*, k.h AS known
  FROM (
    SELECT a.pid, a.datid, a.usesysid, a.backend_start, a.application_name, a.client_addr, a.client_port, a.state,
      a.xact_start, a.query_start, a.state_change, a.query,
      pg_catalog.hash_record_extended(ROW(a.pid, a.backend_start, a.application_name, a.state, a.xact_start,
        a.query_start, a.state_change), 0) & 4503599627370495 AS h
    FROM pg_catalog.pg_stat_get_activity(NULL) a OFFSET 0) a
  FULL JOIN unnest($4::int8[]) AS k(h) ON k.h = a.h
  WHERE a.h IS NULL OR k.h IS NULL
)
SELECT json_build_object(
  'now', clock_timestamp(),
  'total', sig.total,
  'signature', sig.signature,
  'buckets', COALESCE((SELECT json_agg(json_build_array(b, sig)) FROM pick), '[]'::json),
  'locks', COALESCE((
    SELECT json_agg(json_build_object(
      'database', g.database, 'objsubid', g.objsubid, 'shared', g.shared, 'granted', g.granted,
      'classid', g.classid, 'objid', g.objid, 'pid', g.pid, 'waitstart', g.waitstart)) FROM g), '[]'::json),
  'databases', COALESCE((
    SELECT json_agg(json_build_array(d.oid::int8, d.datname))
    FROM pg_catalog.pg_database d WHERE d.oid IN (SELECT database FROM g)), '[]'::json),
  'blocking', COALESCE((SELECT json_agg(json_build_object('pid', pid, 'by', blocked_by)) FROM blk), '[]'::json),
  'sessionsGone', CASE WHEN $4::int8[] IS NOT NULL THEN COALESCE((
    SELECT json_agg(known) FROM ses WHERE h IS NULL), '[]'::json) END,
  'sessions', COALESCE((
    SELECT json_agg(json_build_object(
      'pid', a.pid, 'h', a.h, 'backendStart', a.backend_start, 'user', pg_catalog.pg_get_userbyid(a.usesysid),
      'application', a.application_name, 'clientAddr', host(a.client_addr), 'clientPort', a.client_port,
      'db', d.datname, 'state', a.state,
      'xactStart', a.xact_start, 'queryStart', a.query_start, 'stateChange', a.state_change,
      'query', CASE WHEN $5::bool OR a.xact_start IS NOT NULL THEN left(a.query, $2) END))
    FROM ses a LEFT JOIN pg_catalog.pg_database d ON d.oid = a.datid
    WHERE a.h IS NOT NULL
      AND (a.pid IN (SELECT unnest($7::int4[])) OR a.pid IN (SELECT pid FROM cand)
        OR a.pid IN (SELECT unnest(pids) FROM blkp))), '[]'::json)
) AS snapshot
FROM sig
`;
