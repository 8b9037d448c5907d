/**
 * Settings shared by the database lock sources (PostgreSQL advisory locks, MySQL/MariaDB user-level locks): hazard
 * thresholds, the statement timeout of each poll, and whether query text may be shown to viewers.
 */
import { readBool, readInt, type Env } from "../../lib/config/env";

export interface DbHazardThresholds {
  /** DB_IDLE_IN_TRANSACTION_MS: a holder idle inside an open transaction this long is flagged. */
  idleInTransactionMs: number;
  /** DB_IDLE_HOLDER_MS: a session-level lock whose session has run nothing for this long may be leaked. */
  idleHolderMs: number;
  /** DB_LONG_WAIT_MS: a waiter waiting this long is flagged. */
  longWaitMs: number;
  /** LOCK_MAX_HOLD_MS (agent-wide): held at least this long is flagged; 0 = off. */
  maxHoldMs: number;
}

export interface DbLockSettings {
  thresholds: DbHazardThresholds;
  /** DB_STATEMENT_TIMEOUT_MS: the server cancels a poll statement that runs longer. */
  statementTimeoutMs: number;
  /** DB_MAX_LOCKS: lock rows read per poll per server (the query's LIMIT). */
  maxLocks: number;
  /** SHOW_QUERIES=on: send the holder's and waiters' query text (cut, escaped) to the dashboard. */
  showQueries: boolean;
  /** Characters of query text kept when shown. */
  queryChars: number;
}

export const DEFAULT_DB_THRESHOLDS: DbHazardThresholds = {
  idleInTransactionMs: 60_000,
  idleHolderMs: 10 * 60_000,
  longWaitMs: 30_000,
  maxHoldMs: 15 * 60_000,
};

export function loadDbLockSettings(env: Env): DbLockSettings {
  return {
    thresholds: {
      idleInTransactionMs: readInt(env, "DB_IDLE_IN_TRANSACTION_MS", 60_000, 1000, 30 * 86_400_000),
      idleHolderMs: readInt(env, "DB_IDLE_HOLDER_MS", 10 * 60_000, 1000, 30 * 86_400_000),
      longWaitMs: readInt(env, "DB_LONG_WAIT_MS", 30_000, 100, 30 * 86_400_000),
      maxHoldMs: readInt(env, "LOCK_MAX_HOLD_MS", 15 * 60_000, 0, 30 * 86_400_000),
    },
    statementTimeoutMs: readInt(env, "DB_STATEMENT_TIMEOUT_MS", 2000, 50, 60_000),
    maxLocks: readInt(env, "DB_MAX_LOCKS", 50_000, 1, 1_000_000),
    showQueries: readBool(env, "SHOW_QUERIES", false),
    // The escaped text is cut at this many characters plus a short note of what was cut: it must fit the
    // contract's 4096-character fields.
    queryChars: readInt(env, "DB_QUERY_CHARS", 200, 16, 4000),
  };
}

export function duration(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
