/**
 * The only Redis commands the agent uses to watch locks, all read-only and bounded. The ioredis implementation is
 * in redis-client.ts; unit tests implement this port with a fake.
 */

/** TYPE and PTTL of one key. pttl: -1 = no expiry, -2 = gone. */
export interface KeyProbe {
  type: string;
  pttl: number;
}

/** A bounded read of one lock key's content, by type. Everything is a prefix or a first page. */
export interface KeySample {
  key: Buffer;
  type: string;
  pttl: number;
  /** Strings: the first previewBytes bytes and the full length. */
  string?: { prefix: Buffer; length: number };
  /** Hashes: the first page of fields (HSCAN) and the field count. */
  hash?: { length: number; fields: Array<[Buffer, Buffer]> };
  /** Sorted sets: the lowest-scored members and the member count. */
  zset?: { length: number; members: Array<[Buffer, number]> };
  /** Lists: the head of the list and its length. */
  list?: { length: number; items: Buffer[] };
  /** Sets: a first page of members and the member count. */
  set?: { length: number; members: Buffer[] };
  /**
   * A cluster node answered MOVED or ASK (the raw error): the key's slot is served by another node, so this node
   * says nothing about the key; type and pttl are then "none" and -2 and must not be read as a deletion.
   */
  moved?: string;
}

export interface RedisLockPort {
  /**
   * One SCAN step, with MATCH when `match` is given (a glob as raw bytes). Returns the next cursor ("0" when the
   * pass is complete) and the keys.
   */
  scan(cursor: string, count: number, match?: Buffer): Promise<{ cursor: string; keys: Buffer[] }>;
  /** Pipelined TYPE + PTTL + a bounded read per key; one round trip for a batch. */
  sample(keys: Buffer[], expectedTypes: ReadonlyArray<string | undefined>, previewBytes: number): Promise<KeySample[]>;
  /**
   * The safety sweep's cheap re-read (sweep-check.ts): PTTL and the same bounded read as sample(), without TYPE and
   * the length, pipelined. Per key the sample it implies (lengths from what was read), or null when the read
   * cannot be complete or failed (a WRONGTYPE error: the type changed): such a key needs sample(). Optional: a port
   * without it has every swept key read with sample().
   */
  resample?(keys: Buffer[], types: readonly string[], previewBytes: number): Promise<Array<KeySample | null>>;
  /**
   * The safety sweep's check of locks with companion keys (a Redisson lock's queue and deadline set, a permit
   * semaphore's lease set): one EXISTS of each group's keys, pipelined. Per group how many of its keys exist, or
   * null when that EXISTS failed (a cluster's CROSSSLOT, an ACL without +exists): such a lock needs sample().
   * Optional: a port without it has such locks read with sample().
   */
  countExisting?(groups: Buffer[][]): Promise<Array<number | null>>;
  /** PUBSUB NUMSUB: subscribers per channel (Redisson waiters wait on a channel, not in a key). */
  numsub(channels: string[]): Promise<unknown>;
  /** INFO server run_id: changes when the server restarts (and loses what it had not persisted). */
  runId(): Promise<string>;
  /**
   * Whether the last runId()'s INFO server showed a server whose SCAN cursor walks the table in reversed-bit order
   * (Redis, Valkey, KeyDB; not a proxy or another server), so that a pass may walk its two halves at once
   * (redis-source.ts, scanHalves). Optional: a port without it is scanned one step at a time.
   */
  halvesScan?(): boolean;
  /**
   * fingerprint-1.lua (read-only), pipelined: SHA-1 hex of each string's whole value, or null (not a string, longer
   * than maxBytes, or the script refused). Only for values longer than the prefix sample() read. Optional: a port
   * without it leaves such locks without a fingerprint (not force-releasable).
   */
  fingerprints?(keys: Buffer[], maxBytes: number): Promise<Array<string | null>>;
  /** INFO commandstats, for the server's own account of what lockscope's commands cost (server-time-budget.ts). */
  commandStats?(): Promise<string>;
}

/** Facts about the node itself, all read-only: INFO sections and the cluster's own view of its topology. */
export interface RedisNodePort {
  /** INFO replication / INFO cluster as the server prints it. */
  info(section: "replication" | "cluster"): Promise<string>;
  /** CLUSTER NODES as the server prints it (cluster mode only). */
  clusterNodes(): Promise<string>;
}

/**
 * A replica asked whether it has the master's lock keys: pipelined EXISTS, one answer per key, in order; with no
 * keys, a PING (the replica answers at all).
 */
export interface RedisReplicaPort {
  exists(keys: Buffer[]): Promise<boolean[]>;
}
