/**
 * The one statement a poll runs against a PostgreSQL server (a constant, not a file, so a bundled agent carries it):
 * every advisory lock (held and awaited, all databases), who blocks each waiting session, and the sessions involved.
 * $1 = at most this many advisory lock rows; $2 = cut query text at this many characters; $3 = the signature of the
 * lock rows the agent already has (null: send them anyway); $4 = the hashes of the session rows the agent already has
 * (an int8 array; null: send every session involved).
 *
 * Read-only, and it takes no advisory or row lock: pg_locks and pg_stat_activity read shared memory; the only locks
 * are ACCESS SHARE on the catalog it reads, and the session's lock_timeout keeps even that from ever queueing
 * behind an ACCESS EXCLUSIVE. pg_blocking_pids (which briefly locks the whole lock manager) is called only along the
 * chains that start at an advisory waiter: from each such waiter to its blockers, and on from those that are
 * themselves waiting, whatever they wait for (a row, a table), up to the root. UNION drops a row already seen, so a
 * cycle ends the recursion.
 *
 * The signature is the row count and the sum of a 64-bit hash of each advisory row (every column the agent reads:
 * key, database, mode, granted, pid, and a waiter's waitstart), computed over the whole lock table, not only the
 * LIMITed rows. When it equals $3 the lock rows and database names are left out (`changed` false) and the agent keeps
 * the rows it has: turning 5,000 rows into JSON is most of the statement's cost, reading them is not. Any row that
 * differs (a holder swap with equal counts, a waiter granted, a new wait) changes the sum unless two 64-bit hash sums
 * collide. A reused pid with the same rows is caught by the sessions, which come every poll with their backend_start.
 * The hash is of an exact packing (a pid is below 2^22 on Linux, so pid << 4 stays clear of the database oid's bits);
 * no term is ever NULL (a waiter's waitstart is NULL for a moment before its wait begins), so no row drops out of the
 * sum.
 *
 * The sessions come the same way, one by one: every backend in pg_stat_activity gets a hash of what the agent reads
 * from its row and what can change (pid, backend_start, application_name, state, xact_start, query_start,
 * state_change: a new statement, a new state or a new session with a reused pid changes one of them; the query text
 * changes only with query_start), cut to 52 bits so that JSON carries it exactly. `sessionKeys` lists every backend's
 * pid and hash, and `sessions` holds the full rows only of the sessions involved (the lock rows' pids and the blocking
 * chains) whose hash is not among the agent's ($4). At 1,000 sessions the full rows were most of an unchanged poll's
 * server time (13.5 to 14.0 ms against 10.0 ms with the hashes, in one run at load average 6; see BENCHMARKS.md);
 * hashing every backend costs less than finding the involved ones first.
 *
 * Output: one row, one json column `snapshot`: { now, total, signature, changed, locks: [group] | null,
 * databases: [[oid, name]] | null, blocking: [...], sessionKeys: { pid: [...], h: [...] }, sessions: [...] }. The locks come grouped by what most rows share
 * (database, objsubid, mode, granted, and whether the key's high half is 0), each group one array per column, and a
 * column a group does not need is null: classid when every key is below 2^32, waitstart for holders. Building one JSON
 * object per lock cost about 17 ms of server CPU per poll at 5,000 locks, one array per column about 5 ms, and the
 * groups leave out five of the eight columns for the usual lock (measured: 19-22 ms against 27 ms in full, at load
 * average 7.6, where the figures are about twice those at load 2.5).
 */
export const PG_POLL_SQL = `
WITH RECURSIVE l AS MATERIALIZED (
  SELECT locktype, database, classid, objid, objsubid, mode, granted, pid, waitstart
  FROM pg_catalog.pg_locks
  WHERE pid IS NOT NULL AND (locktype = 'advisory' OR NOT granted)
),
sig AS (
  SELECT count(*) AS total, count(*) || ':' || COALESCE(sum(
    pg_catalog.hashint8extended((classid::int8 << 32) | objid::int8,
      (COALESCE(database, 0)::int8 << 32) # (pid::int8 << 4) # (objsubid::int8 << 2)
        # CASE WHEN mode = 'ShareLock' THEN 2 ELSE 0 END # CASE WHEN granted THEN 1 ELSE 0 END)
    # CASE WHEN granted THEN 0 ELSE COALESCE(pg_catalog.hashtextextended(waitstart::text, 0), 1) END), 0) AS signature
  FROM l WHERE locktype = 'advisory'
),
adv AS (
  SELECT * FROM l WHERE locktype = 'advisory' LIMIT $1
),
waiting AS (
  SELECT DISTINCT pid FROM l WHERE NOT granted
),
blk(pid, blocked_by) AS (
  SELECT w.pid, pg_catalog.pg_blocking_pids(w.pid) FROM (SELECT DISTINCT pid FROM adv WHERE NOT granted) w
  UNION
  SELECT b.pid, pg_catalog.pg_blocking_pids(b.pid)
  FROM blk, LATERAL unnest(blk.blocked_by) AS b(pid)
  WHERE b.pid IN (SELECT pid FROM waiting)
),
pids AS (
  SELECT pid FROM adv UNION SELECT pid FROM blk UNION SELECT unnest(blocked_by) FROM blk
),
act AS MATERIALIZED (
  SELECT a.pid, a.backend_start, a.usename, a.application_name, a.client_addr, a.client_port, a.datname, a.state,
    a.xact_start, a.query_start, a.state_change, a.query,
    pg_catalog.hash_record_extended(ROW(a.pid, a.backend_start, a.application_name, a.state, a.xact_start,
      a.query_start, a.state_change), 0) & 4503599627370495 AS h
  FROM pg_catalog.pg_stat_activity a
)
SELECT json_build_object(
  'now', clock_timestamp(),
  'total', sig.total,
  'signature', sig.signature,
  'changed', sig.signature IS DISTINCT FROM $3::text,
  'locks', CASE WHEN sig.signature IS DISTINCT FROM $3::text THEN COALESCE((
    SELECT json_agg(json_build_object(
      'database', g.database, 'objsubid', g.objsubid, 'shared', g.shared, 'granted', g.granted,
      'classid', g.classid, 'objid', g.objid, 'pid', g.pid, 'waitstart', g.waitstart))
    FROM (
      SELECT database::int8 AS database, objsubid, mode = 'ShareLock' AS shared, granted,
        array_agg(classid::int8) FILTER (WHERE classid <> 0) AS classid, array_agg(objid::int8) AS objid,
        array_agg(pid) AS pid, array_agg(waitstart) FILTER (WHERE NOT granted) AS waitstart
      FROM adv GROUP BY 1, 2, 3, 4, classid = 0) g), '[]'::json) END,
  'databases', CASE WHEN sig.signature IS DISTINCT FROM $3::text THEN COALESCE((
    SELECT json_agg(json_build_array(d.oid::int8, d.datname))
    FROM pg_catalog.pg_database d WHERE d.oid IN (SELECT database FROM adv)), '[]'::json) END,
  'blocking', COALESCE((SELECT json_agg(json_build_object('pid', pid, 'by', blocked_by)) FROM blk), '[]'::json),
  'sessionKeys', (SELECT json_build_object('pid', COALESCE(json_agg(pid), '[]'::json),
    'h', COALESCE(json_agg(h), '[]'::json)) FROM act),
  'sessions', COALESCE((
    SELECT json_agg(json_build_object(
      'pid', a.pid, 'h', a.h, 'backendStart', a.backend_start, 'user', a.usename, 'application', a.application_name,
      'clientAddr', host(a.client_addr), 'clientPort', a.client_port, 'db', a.datname, 'state', a.state,
      'xactStart', a.xact_start, 'queryStart', a.query_start, 'stateChange', a.state_change,
      'query', left(a.query, $2)))
    FROM act a WHERE a.h NOT IN (SELECT unnest($4::int8[])) AND a.pid IN (SELECT pid FROM pids)), '[]'::json)
) AS snapshot
FROM sig
`;
