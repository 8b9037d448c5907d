import pg from "pg";
import type { PgPort } from "./pg-port";
import { PG_POLL_SQL } from "./pg-poll-sql";

export interface PgClientOptions {
  url: string;
  statementTimeoutMs: number;
  connectTimeoutMs: number;
}

/**
 * The session settings of the agent's connection, set at connect time so that no poll ever runs without them:
 * read-only, UTC, a statement timeout and a lock timeout. plan_cache_mode=force_generic_plan makes the poll's
 * prepared statement use its one generic plan from the first poll on (the default, auto, plans the first five polls
 * again each time and then decides by estimates); the connection's other two statements are single-table look-ups
 * by pid, for which a generic plan is the same plan.
 */
export function pgSessionOptions(statementTimeoutMs: number): string {
  const t = statementTimeoutMs;
  return `-c default_transaction_read_only=on -c TimeZone=UTC -c statement_timeout=${t} -c lock_timeout=${Math.max(50, Math.floor(t / 2))} -c idle_in_transaction_session_timeout=${t * 5} -c plan_cache_mode=force_generic_plan`;
}

/**
 * The name of PG_POLL_SQL's prepared statement on the agent's connection. Preparing it once per connection saves
 * parsing, analysing and planning the statement at every poll (about 1.1 ms of the server's CPU at 1,000 sessions);
 * node-postgres prepares it again on a new connection. A prepared statement holds no lock between polls.
 */
export const PG_POLL_STATEMENT = "lockscope_poll";

/** PG_POLL_SQL with its parameters, as the agent runs it: the named statement. */
export function pgPollQuery(values: unknown[]): pg.QueryConfig {
  return { name: PG_POLL_STATEMENT, text: PG_POLL_SQL, values };
}

/**
 * node-postgres behind PgPort. One connection per server (a pool of one, which reconnects after an error), with
 * pgSessionOptions; it is named `lockscope-agent` so operators can tell it apart in pg_stat_activity.
 */
export class NodePgPort implements PgPort {
  private readonly pool: pg.Pool;

  constructor(opts: PgClientOptions) {
    this.pool = new pg.Pool({
      connectionString: opts.url,
      max: 1,
      idleTimeoutMillis: 0,
      connectionTimeoutMillis: opts.connectTimeoutMs,
      application_name: "lockscope-agent",
      options: pgSessionOptions(opts.statementTimeoutMs),
    });
    // A dropped connection is reported by the next query; without a listener the pool's error would crash us.
    this.pool.on("error", () => undefined);
  }

  async snapshot(
    maxLocks: number,
    queryChars: number,
    knownSignature: string | null,
    knownSessions: number[] | null = null,
    showQueries = false,
    knownBuckets: ReadonlyArray<string | null> | null = null,
    knownPids: number[] | null = null,
  ): Promise<unknown> {
    const r = await this.pool.query<{ snapshot: unknown }>(
      pgPollQuery([maxLocks, queryChars, knownSignature, knownSessions, showQueries, knownBuckets, knownPids]),
    );
    return r.rows[0]?.snapshot;
  }

  async sessionLocks(pid: number): Promise<Array<{ locktype: string; mode: string; count: number }>> {
    const r = await this.pool.query<{ locktype: string; mode: string; count: number }>(
      "SELECT locktype, mode, count(*)::int AS count FROM pg_catalog.pg_locks WHERE pid = $1 AND granted GROUP BY 1, 2 ORDER BY 1, 2",
      [pid],
    );
    return r.rows;
  }

  async terminate(
    pid: number,
    backendStart: string,
    waitMs: number,
  ): Promise<{ matched: boolean; terminated: boolean }> {
    const r = await this.pool.query<{ terminated: boolean }>(
      "SELECT pg_catalog.pg_terminate_backend(pid, $3) AS terminated FROM pg_catalog.pg_stat_activity WHERE pid = $1 AND backend_start = $2::timestamptz",
      [pid, backendStart, waitMs],
    );
    return { matched: r.rows.length > 0, terminated: r.rows[0]?.terminated === true };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
