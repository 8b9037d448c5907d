/**
 * The one statement a poll runs against a PostgreSQL server (a constant, not a file, so a bundled agent carries it):
 * every advisory lock (held and awaited, all databases), who blocks each waiting session, and the sessions involved.
 * $1 = at most this many advisory lock rows; $2 = cut query text at this many characters.
 *
 * Read-only, and it takes no advisory or row lock: pg_locks and pg_stat_activity read shared memory; the only locks
 * are ACCESS SHARE on the catalog it reads, and the session's lock_timeout keeps even that from ever queueing
 * behind an ACCESS EXCLUSIVE. pg_blocking_pids (which briefly locks the whole lock manager) is called only along the
 * chains that start at an advisory waiter: from each such waiter to its blockers, and on from those that are
 * themselves waiting, whatever they wait for (a row, a table), up to the root. UNION drops a row already seen, so a
 * cycle ends the recursion.
 *
 * Output: one row, one json column `snapshot`: { now, total, locks: [...], blocking: [...], sessions: [...] }.
 */
export const PG_POLL_SQL = `
WITH RECURSIVE l AS MATERIALIZED (
  SELECT locktype, database, classid, objid, objsubid, mode, granted, pid, virtualtransaction, waitstart
  FROM pg_catalog.pg_locks
  WHERE pid IS NOT NULL
),
adv AS (
  SELECT * FROM l WHERE locktype = 'advisory'
  ORDER BY granted DESC, database, classid, objid, objsubid, pid
  LIMIT $1
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
)
SELECT json_build_object(
  'now', clock_timestamp(),
  'total', (SELECT count(*) FROM l WHERE locktype = 'advisory'),
  'locks', COALESCE((
    SELECT json_agg(json_build_object(
      'db', d.datname, 'classid', adv.classid, 'objid', adv.objid, 'objsubid', adv.objsubid, 'mode', adv.mode,
      'granted', adv.granted, 'pid', adv.pid, 'vxid', adv.virtualtransaction, 'waitstart', adv.waitstart))
    FROM adv LEFT JOIN pg_catalog.pg_database d ON d.oid = adv.database), '[]'::json),
  'blocking', COALESCE((SELECT json_agg(json_build_object('pid', pid, 'by', blocked_by)) FROM blk), '[]'::json),
  'sessions', COALESCE((
    SELECT json_agg(json_build_object(
      'pid', a.pid, 'backendStart', a.backend_start, 'user', a.usename, 'application', a.application_name,
      'clientAddr', host(a.client_addr), 'clientPort', a.client_port, 'db', a.datname, 'state', a.state,
      'xactStart', a.xact_start, 'queryStart', a.query_start, 'stateChange', a.state_change,
      'backendXid', a.backend_xid, 'query', CASE WHEN $2 > 0 THEN left(a.query, $2) END))
    FROM pg_catalog.pg_stat_activity a JOIN pids ON pids.pid = a.pid), '[]'::json)
) AS snapshot
`;
