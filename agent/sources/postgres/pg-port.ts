/** The only statements the PostgreSQL source runs. Unit tests fake this port; integration tests use the real one. */
export interface PgPort {
  /**
   * PG_POLL_SQL: the parsed-later JSON snapshot of advisory locks, blocking pids and sessions. With the signature of
   * all the lock rows the agent has and of each of its buckets of them (PG_LOCK_BUCKETS entries, null: send that
   * bucket), the server sends only the buckets asked for while the first is the same, and else every bucket whose
   * signature is not the same; with the hashes of the session rows it has, the server leaves those sessions out. A
   * session's query text comes only with showQueries, or while it is inside a transaction (the level's evidence needs
   * it only then). knownPids: the pids of the lock rows the agent has (with knownSessions; an unknown session's row
   * comes if its pid is one of them, in a bucket sent, or in a blocking chain).
   */
  snapshot(
    maxLocks: number,
    queryChars: number,
    knownSignature: string | null,
    knownSessions?: number[] | null,
    showQueries?: boolean,
    knownBuckets?: ReadonlyArray<string | null> | null,
    knownPids?: number[] | null,
  ): Promise<unknown>;
  /** Lock counts this session holds now, by locktype and mode (a release's dry run shows them). */
  sessionLocks(pid: number): Promise<Array<{ locktype: string; mode: string; count: number }>>;
  /**
   * Ends the session only if pid AND backend_start still match, in one statement: a pid reused by a newer session
   * has another backend_start and is never ended. matched: the session existed; terminated: it exited in time.
   */
  terminate(pid: number, backendStart: string, waitMs: number): Promise<{ matched: boolean; terminated: boolean }>;
  close(): Promise<void>;
}
