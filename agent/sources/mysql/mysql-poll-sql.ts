/**
 * The one statement a poll runs, per flavour. Both return rows { k: "h" | "w", id, name_hex, user, host, db,
 * command, time_ms, state, info }: holders ("h") and waiters ("w") of user-level locks (GET_LOCK). The name comes as
 * HEX() so its bytes arrive exactly as the server keeps them. Placeholders: query text cut at ?, at most ? rows.
 * Read-only; the information tables take no lock that a GET_LOCK caller could wait on.
 */

/** MariaDB: METADATA_LOCK_INFO (plugin metadata_lock_info) lists held user locks; waiters are PROCESSLIST rows. */
export const MARIADB_POLL_SQL = `
SELECT 'h' AS k, m.THREAD_ID AS id, HEX(m.TABLE_SCHEMA) AS name_hex, p.USER AS user, p.HOST AS host, p.DB AS db,
       p.COMMAND AS command, p.TIME_MS AS time_ms, p.STATE AS state, LEFT(p.INFO, ?) AS info
  FROM information_schema.METADATA_LOCK_INFO m
  LEFT JOIN information_schema.PROCESSLIST p ON p.ID = m.THREAD_ID
 WHERE m.LOCK_TYPE = 'User lock'
UNION ALL
SELECT 'w', p.ID, NULL, p.USER, p.HOST, p.DB, p.COMMAND, p.TIME_MS, p.STATE, LEFT(p.INFO, 4096)
  FROM information_schema.PROCESSLIST p
 WHERE p.STATE IN ('User lock', 'Waiting for user lock')
LIMIT ?`;

/**
 * performance_schema.metadata_locks lists held (GRANTED) and awaited (PENDING) user-level locks: MySQL 8, and MariaDB
 * started with performance_schema=ON and the wait/lock/metadata/sql/mdl instrument (tested on MariaDB 10.11's
 * performance_schema; no MySQL 8 server is installed here).
 */
export const MYSQL8_POLL_SQL = `
SELECT IF(ml.LOCK_STATUS = 'GRANTED', 'h', 'w') AS k, t.PROCESSLIST_ID AS id, HEX(ml.OBJECT_NAME) AS name_hex,
       t.PROCESSLIST_USER AS user, t.PROCESSLIST_HOST AS host, t.PROCESSLIST_DB AS db,
       t.PROCESSLIST_COMMAND AS command, t.PROCESSLIST_TIME * 1000 AS time_ms, t.PROCESSLIST_STATE AS state,
       LEFT(t.PROCESSLIST_INFO, ?) AS info
  FROM performance_schema.metadata_locks ml
  JOIN performance_schema.threads t ON t.THREAD_ID = ml.OWNER_THREAD_ID
 WHERE ml.OBJECT_TYPE = 'USER LEVEL LOCK' AND ml.LOCK_STATUS IN ('GRANTED', 'PENDING')
LIMIT ?`;
