/**
 * What the database lock sources (PostgreSQL advisory locks, MySQL/MariaDB user-level locks) share: a tracker fed by
 * complete reads of the server's lock table, the source's status, and the rule that only a successful, untruncated
 * read may count a lock as released (a failed or truncated one never does). Each source does its own I/O, model and
 * force-release; this base only turns "the locks seen now" into events and status.
 */
import type { Env } from "../../lib/config/env";
import type { Backend, Hazard, Lock, SourceStatus } from "../../lib/contract/lock";
import type { ReleaseCommand } from "../../lib/contract/release";
import { LockTracker, type ObservedLock, type TrackerOutput } from "../core/tracker";
import type { ReleaseRun } from "../release/release-runner";
import type { BackendModule } from "./backend-module";
import type { DbLockSettings } from "./db-lock-settings";
import type { WatchedSource } from "./source-port";

export interface DbLockSourceOptions {
  sourceId: string;
  agentId: string;
  newId: () => string;
  log: (line: string) => void;
  settings: DbLockSettings;
  hazardMemoryMs?: number;
  now?: () => number;
}

export const EMPTY_OUTPUT: TrackerOutput = { events: [], upserts: [], removed: [] };

/** One read of the server's lock table, as the source's model made it. */
export interface DbLockRead {
  locks: ObservedLock[];
  observedAtMs: number;
  /** When the poll began (agent clock): lastScanMs is the time from there to observedAtMs. */
  startedMs: number;
  /** The server had more lock rows than were read: nothing absent counts as released. */
  truncated: boolean;
  /** Source-level hazards of this read (too many locks, unnamed waiters, ...). */
  hazards: Hazard[];
}

export abstract class DbLockSource implements WatchedSource {
  protected readonly tracker: LockTracker;
  protected readonly now: () => number;
  private up = false;
  private error: string | undefined = "not polled yet";
  private lastScanAt: string | undefined;
  private lastScanMs: number | undefined;
  private hazards: Hazard[] = [];

  protected constructor(
    private readonly kind: Extract<Backend, "postgres" | "mysql">,
    protected readonly opts: DbLockSourceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.tracker = new LockTracker({
      agentId: opts.agentId,
      newId: opts.newId,
      history: { maxHoldMs: opts.settings.thresholds.maxHoldMs, rememberMs: opts.hazardMemoryMs ?? 5 * 60_000 },
    });
  }

  abstract poll(): Promise<TrackerOutput>;
  abstract release(cmd: ReleaseCommand): Promise<ReleaseRun>;

  status(): SourceStatus {
    const s: SourceStatus = {
      id: this.opts.sourceId,
      kind: this.kind,
      up: this.up,
      locks: this.tracker.size,
      agentId: this.opts.agentId,
    };
    if (this.error) s.error = this.error;
    if (this.lastScanAt) s.lastScanAt = this.lastScanAt;
    if (this.lastScanMs !== undefined) s.lastScanMs = this.lastScanMs;
    if (this.hazards.length > 0) s.hazards = this.hazards;
    return s;
  }

  locks(): Lock[] {
    return this.tracker.locks();
  }

  has(lockId: string): boolean {
    return this.tracker.has(lockId);
  }

  /** The lock as the last read saw it. */
  protected lock(lockId: string): Lock | undefined {
    return this.tracker.locks().find((l) => l.id === lockId);
  }

  /** Tracks one successful read into events: a lock it lacks is released unless the read was truncated. */
  protected track(read: DbLockRead): TrackerOutput {
    const { observedAtMs } = read;
    this.hazards = read.hazards;
    const present = new Set(read.locks.map((l) => l.id));
    const gone = read.truncated
      ? []
      : this.tracker
          .locks()
          .filter((l) => !present.has(l.id))
          .map((l) => ({ id: l.id, atMs: observedAtMs }));
    const out = this.tracker.apply(
      read.locks.map((lock) => ({ lock, observedAtMs })),
      gone,
      { via: "poll" },
    );
    if (!this.up && this.error !== "not polled yet") this.opts.log(`${this.opts.sourceId}: polling again`);
    this.up = true;
    this.error = undefined;
    this.lastScanAt = new Date(observedAtMs).toISOString();
    this.lastScanMs = observedAtMs - read.startedMs;
    return out;
  }

  /** A failed read: the source is down, logged once per distinct message; its locks stay as last seen. */
  protected fail(message: string): TrackerOutput {
    if (this.up || this.error !== message) this.opts.log(`${this.opts.sourceId}: poll failed: ${message}`);
    this.up = false;
    this.error = message.slice(0, 500);
    return EMPTY_OUTPUT;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** What a database backend's configuration holds: one target per server, and the shared settings. */
export interface DbLockConfig {
  targets: Array<{ id: string; url: string }>;
  settings: DbLockSettings;
}

/**
 * The BackendModule of a database lock backend: one port (one connection) and one source per server. The first
 * poll connects; a server that is down is reported by it and retried every poll, so `ready` settles at once.
 */
export function dbLockBackend<C extends DbLockConfig, P extends { close(): Promise<void> }>(spec: {
  name: Extract<Backend, "postgres" | "mysql">;
  load: (env: Env) => C | null;
  port: (opts: { url: string; statementTimeoutMs: number; connectTimeoutMs: number }) => P;
  source: (port: P, opts: DbLockSourceOptions) => DbLockSource;
}): BackendModule<C> {
  return {
    name: spec.name,
    load: (env) => spec.load(env),
    create(config, deps) {
      const ports = config.targets.map((t) =>
        spec.port({
          url: t.url,
          statementTimeoutMs: config.settings.statementTimeoutMs,
          connectTimeoutMs: deps.agent.commandTimeoutMs,
        }),
      );
      const sources = config.targets.map((t, i) =>
        spec.source(ports[i]!, {
          sourceId: t.id,
          agentId: deps.agent.agentId,
          newId: deps.newId,
          log: deps.log,
          settings: config.settings,
          hazardMemoryMs: deps.agent.hazardMemoryMs,
        }),
      );
      return {
        sources,
        ready: Promise.resolve(),
        watched: config.targets.map((t) => t.id),
        close: () => Promise.all(ports.map((p) => p.close())).then(() => undefined),
      };
    },
  };
}
