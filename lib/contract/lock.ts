/**
 * The lock model shared by the agent, the dashboard server and the browser (types only on the browser side).
 * Field names follow ../shared/reference/api-contract.md; outside tools call them by these exact names.
 */

/**
 * Every backend lockscope watches. The one list: validation, the API's filters, the dashboard's backend filter and
 * labels all derive from it, so a new backend is added here once (and in its own agent/sources/<name>/ folder).
 */
export const BACKENDS = ["redis", "redlock", "zookeeper", "postgres", "mysql"] as const;

export type Backend = (typeof BACKENDS)[number];

/** How the dashboard names each backend. */
export const BACKEND_LABELS: Record<Backend, string> = {
  // The filter says what each backend covers: a node-redlock lock on one Redis node is a Redis lock (its library
  // says node-redlock), only groups configured as REDLOCK_NODES are Redlock.
  redis: "Redis nodes and clusters (any library)",
  redlock: "Redlock groups (REDLOCK_NODES)",
  zookeeper: "ZooKeeper",
  postgres: "PostgreSQL",
  mysql: "MySQL/MariaDB",
};

export function isBackend(value: string): value is Backend {
  return (BACKENDS as readonly string[]).includes(value);
}

export type Severity = "info" | "warning" | "critical";

/** A condition that makes a lock unsafe or suspicious, computed by the agent from what it observed. */
export interface Hazard {
  code: string;
  severity: Severity;
  message: string;
}

/** Holder details decoded from the lock's format (Redisson client id and thread, ShedLock host, ...). */
export type LockHolder = Record<string, string | number | boolean>;

/**
 * One of several holders of a lock that has many by design (the permits of a semaphore). Each permit is acquired
 * and released on its own; a new permit holder is not a takeover of another's.
 */
export interface LockHolding {
  /** The permit holder's identifier, escaped. */
  owner: string;
  /** ISO time the agent first saw this holder (set by the agent's tracker). */
  since?: string;
  /** This permit's remaining lease when the format records one; null: the permit never expires on its own. */
  ttlMs?: number | null;
}

export interface Waiter {
  owner: string;
  /** ISO time the waiter queued, when the format records it. */
  since?: string;
  detail?: string;
}

export interface Lock {
  /** Stable, URL-safe: derived from backend, source and the raw resource name. */
  id: string;
  backend: Backend;
  /** Which node, group or ensemble it was seen on, e.g. `redis://127.0.0.1:6379/0`. */
  source: string;
  /** The key or lock path as the application named it, escaped for display (see escapeBytes). */
  resource: string;
  /** Holder's token / field / node name, escaped; null when unknown. */
  owner: string | null;
  /**
   * The exact holding, not its display form: `sha1:<hex>` of the raw holder identity (the whole string value, the
   * Redisson holder field, the Redlock token, the ZooKeeper node's creation zxid and session). A force-release is
   * guarded by it, since `owner` may be cut or escaped. Absent when the agent could not compute it.
   */
  ownerFingerprint?: string;
  /** Recognised client library: "redisson", "node-redlock", ..., or "generic". */
  library: string;
  /** Which recogniser rule matched, so an operator can see why the library was chosen. */
  rule: string;
  /** Remaining lease in ms at the time of the answer; null when the lock never expires on its own. */
  ttlMs: number | null;
  holder: LockHolder | null;
  /**
   * Locks with several holders by design (semaphore permits): every holder read. `owner` then names the first of
   * them only, and events are reported per holder. Absent for locks with one holder.
   */
  holders?: LockHolding[];
  /** How many holders there are when more exist than `holders` lists (a bounded read of a large semaphore). */
  holdersTotal?: number;
  /** Queue order, empty when none are visible. */
  waiters: Waiter[];
  /** ISO time the agent first saw the current holder. */
  since: string;
  /** ISO time of the observation the fields above come from. */
  observedAt: string;
  /**
   * ISO time the dashboard received this state of the lock from its agent, on the dashboard's clock (set by the
   * dashboard in its answers; the TTL is counted down from it).
   */
  receivedAt?: string;
  /** Redis type of the key (string, hash, zset, ...) or the ZooKeeper node kind. */
  kind: string;
  /** Bounded, escaped preview of the stored value. */
  valuePreview: string | null;
  hazards: Hazard[];
  /** Which agent reported it. */
  agentId: string;
  /** Redlock locks: the vote of each node of the group. */
  quorum?: QuorumView;
  /** ZooKeeper locks: the contender queue with sessions and watches. */
  zookeeper?: ZkLockView;
  /** PostgreSQL advisory locks and MySQL/MariaDB user-level locks: the sessions holding and waiting. */
  database?: DbLockView;
}

/** A database session (a PostgreSQL backend, a MySQL/MariaDB connection) as the server reports it. */
export interface DbSession {
  /** PostgreSQL backend pid, or the MySQL/MariaDB connection id. */
  pid: number;
  /** PostgreSQL: backend_start exactly as the server printed it (the force-release guard uses it). */
  backendStart?: string;
  user: string | null;
  application: string | null;
  /** Client address (and port), or "local" for a Unix socket. */
  client: string | null;
  database: string | null;
  /** "active", "idle", "idle in transaction", ... (PostgreSQL); MySQL's COMMAND and STATE. */
  state: string | null;
  /** ISO times from the server. */
  xactStart?: string | null;
  queryStart?: string | null;
  stateChange?: string | null;
  /** The current or last query, cut and escaped: only when the agent runs with SHOW_QUERIES=on. */
  query?: string | null;
}

export interface DbHolding {
  session: DbSession;
  mode: "exclusive" | "shared";
  /** Session-level locks outlive transactions; transaction-level ones end at commit or rollback. */
  level: "session" | "transaction" | "unknown";
  /** Why the level is what it says (or why it cannot be told). */
  levelEvidence: string;
}

export interface DbWaiting {
  session: DbSession;
  mode: "exclusive" | "shared";
  /** ISO time it started waiting, when the server reports it. */
  since: string | null;
  /** Sessions that block it directly (pg_blocking_pids). */
  blockedBy: number[];
  /** From this waiter up to a root blocker (one that waits for nobody), following the first blocker each step. */
  chain: number[];
}

export interface DbLockView {
  engine: "postgres" | "mysql" | "mariadb";
  /** PostgreSQL: the database the advisory lock lives in (advisory keys are per database). */
  database: string | null;
  /** How the key was written: one bigint, two int4, or a MySQL lock name. */
  keyKind: "bigint" | "int4-pair" | "name";
  holders: DbHolding[];
  waiters: DbWaiting[];
}

export type QuorumState = "held" | "at-risk" | "minority" | "split" | "quorum-lost" | "expired";

export interface QuorumNode {
  /** The node's id, as in the group's configuration (credentials removed). */
  node: string;
  state: "up" | "down" | "slow";
  /** The resource's key exists on this node. */
  present: boolean;
  token: string | null;
  ttlMs: number | null;
  latencyMs?: number;
  error?: string;
}

export interface QuorumView {
  group: string;
  /** Nodes holding the winning (most voted) token. */
  votes: number;
  nodes: number;
  /** floor(N/2)+1 */
  needed: number;
  state: QuorumState;
  /** PTTL still held by a majority, less the drift allowance (1% of TTL + 2 ms); null when no quorum. */
  validityMs: number | null;
  /** Some nodes did not answer: the view is built from the ones that did. */
  partial: boolean;
  perNode: QuorumNode[];
}

export interface ZkWatcher {
  session: string;
  host?: string;
  /** true: read from the server's own watch table (wchc/wchp); false: inferred from the recipe. */
  observed: boolean;
}

export interface ZkContender {
  /** Child node name, e.g. `_c_3f2a...-lock-0000000007`. */
  node: string;
  sequence: number | null;
  /** ephemeralOwner as 0x-prefixed hex; "0x0" for a persistent node. */
  session: string;
  ephemeral: boolean;
  /** ISO time the node was created (when it queued). */
  ctime: string;
  role: "holder" | "waiter";
  mode: "exclusive" | "read" | "write" | "lease" | "latch";
  /** The node this contender waits on (its predecessor), null for holders. */
  waitsFor: string | null;
  watchedBy: ZkWatcher[];
  dataPreview: string | null;
  /** The client's address: from `cons` for its session, else the IP Curator writes as the node's data. */
  host?: string;
}

export interface ZkLockView {
  recipe: string;
  parent: string;
  contenders: ZkContender[];
  /** Watches read from the server (four-letter words allowed) rather than inferred. */
  watchesObserved: boolean;
  /** The agent's long-wait threshold (ZK_LONG_WAIT_MS), so a viewer can mark waiters as their wait counts up. */
  longWaitMs?: number;
}

export type LockEventType =
  "acquired" | "released" | "expired" | "renewed" | "owner-changed" | "lost" | "source-down" | "source-up";

/** One observed change. The id is assigned by the agent so that a replay is stored once. */
export interface LockEvent {
  id: string;
  agentId: string;
  type: LockEventType;
  lockId: string;
  backend: Backend;
  source: string;
  resource: string;
  owner: string | null;
  previousOwner?: string | null;
  library?: string;
  ttlMs?: number | null;
  /** ISO time the agent observed the change. */
  at: string;
  /** How the change was seen and type-specific facts (afterExpiry, heldMs, reason, ...). */
  detail?: Record<string, string | number | boolean | null>;
}

export interface SourceStatus {
  /** Same string as Lock.source. */
  id: string;
  kind: Backend;
  up: boolean;
  error?: string;
  /** Locks currently seen on the source. */
  locks: number;
  /**
   * Lock keys seen on the source beyond the agent's cap (MAX_LOCKS_PER_SOURCE) and not tracked: the view shows
   * `locks` of `locks + untracked`. Absent or 0 when everything seen is tracked.
   */
  untracked?: number;
  lastScanAt?: string;
  lastScanMs?: number;
  /** Redis: the COUNT of the agent's last SCAN step (sized to REDIS_SCAN_STEP_US while the budget paces the pass). */
  scanStepCount?: number;
  /**
   * Redis in track mode: how long the safety sweep's last round over every known lock took (each lock is re-read
   * about once per REDIS_SWEEP_MS, or slower when that would cost more than its part of the server-time budget).
   */
  lastSweepMs?: number;
  /** ISO time of the source's last completed read of its locks (a poll), so a viewer can tell stale data. */
  lastPollAt?: string;
  /** How often the source reads its locks (POLL_INTERVAL_MS for Redis), so "stale" is judged against it. */
  pollIntervalMs?: number;
  agentId: string;
  /** Per-node health behind the source: replicas of a master, masters of a cluster, members of a Redlock group. */
  nodes?: NodeStatus[];
  /** Hazards of the source as a whole, not of one lock (empty ZooKeeper lock parents piling up in a directory). */
  hazards?: Hazard[];
  /**
   * Redis: how changes are detected now. "track": the server announces changes of the locks read (CLIENT
   * TRACKING); "poll": every known lock is re-read on each poll (chosen, or the fallback when tracking is refused).
   */
  changeDetection?: "track" | "poll";
  /** Why the source works as it does, when that is not what was configured (tracking refused, degraded). */
  note?: string;
}

export interface NodeStatus {
  id: string;
  /** "master", "replica", "standalone", "redlock-member", ... */
  role: string;
  up: boolean;
  latencyMs?: number;
  /** Replication offset, and how far a replica is behind its master in bytes. */
  offset?: number;
  lagBytes?: number;
  /** This node's clock minus the agent's, from TIME. */
  clockOffsetMs?: number;
  error?: string;
  /** Redlock member: "track" while its CLIENT TRACKING is live, "poll" when it is re-read in full each poll. */
  changeDetection?: "track" | "poll";
  /** Why the node is polled although tracking is configured (refused by an ACL, the invalidation link lost). */
  note?: string;
}
