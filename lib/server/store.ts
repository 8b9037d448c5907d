/**
 * The history store: the only module that imports the Prisma client. Everything else talks to HistoryStore.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import type BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import {
  PrismaClient,
  type Alert as AlertRow,
  type AuditEntry as AuditRow,
  type Event as EventRow,
  type Session as SessionRow,
} from "../generated/prisma/client.ts";
import { PrismaClient as PostgresPrismaClient } from "../generated/prisma-postgres/client.ts";
import type { Backend, LockEvent, LockEventType } from "../contract/lock";
import type { AlertState, AlertView } from "../contract/alerts";
import type { Severity } from "../contract/lock";
import type { AuditEntryView, ReleaseNodeResult, ReleaseOutcome } from "../contract/release";
import type { Role } from "./auth/principals";
import type { Session, SessionStore } from "./auth/session";

export interface ResourceHourRow {
  lockId: string;
  resource: string;
  backend: string;
  hour: Date;
  acquisitions: number;
  releases: number;
  expiries: number;
  ownerChanges: number;
  holdCount: number;
  holdMsSum: number;
  holdMsMax: number;
}
import { parseDatabaseUrl, type DatabaseProvider } from "./database-url";
import { isTakeover } from "./history";
import type { AlertRefresh } from "./alerts/alert-refresh";

export interface EventQuery {
  lockId?: string;
  resource?: string;
  backend?: string;
  since?: Date;
  /** Only these event types. */
  types?: string[];
  /** Events strictly older than this one in the listing's order (newest first): the next page. */
  before?: { at: Date; id: string };
  limit: number;
}

export type NewAuditEntry = Omit<AuditEntryView, "id" | "at">;

export interface AuditQuery {
  actor?: string;
  outcome?: string;
  resource?: string;
  since?: Date;
  limit: number;
}

export interface NewAlert {
  key: string;
  rule: string;
  severity: string;
  lockId: string | null;
  backend: string | null;
  source: string;
  resource: string | null;
  message: string;
  evidence: Record<string, unknown>;
  raisedAt: Date;
}

export interface OutboxItem {
  url: string;
  body: string;
  kind: string;
}

export interface PendingDelivery {
  id: string;
  url: string;
  body: string;
  attempts: number;
}

/** An unresolved alert as an evaluation compares it: everything but the evidence, which is the bulk of a row. */
export type OpenAlertState = Omit<AlertView, "evidence" | "ackedAt" | "ackedBy" | "resolvedAt">;

/** An alert's state without its evidence and acknowledgement details. */
export function openAlertStateOf({
  evidence: _e,
  ackedAt: _a,
  ackedBy: _b,
  resolvedAt: _r,
  ...state
}: AlertView): OpenAlertState {
  return state;
}

/** An alert to raise with the webhook deliveries that announce it (built once its id is known). */
export interface AlertToRaise {
  alert: NewAlert;
  outbox: (id: string) => OutboxItem[];
}

export interface HistoryStore extends SessionStore {
  openAlerts(): Promise<AlertView[]>;
  /** The unresolved alerts without their evidence: what each evaluation reads, cheap with thousands open. */
  openAlertStates(): Promise<OpenAlertState[]>;
  countOpenAlerts(): Promise<number>;
  findAlert(id: string): Promise<AlertView | null>;
  /**
   * Stores the alert and its webhook deliveries in one transaction. Null, and nothing written, when an unresolved
   * alert with the same key is already stored: another dashboard raised it first (a unique index in both stores).
   */
  raiseAlert(alert: NewAlert, outbox: (id: string) => OutboxItem[]): Promise<AlertView | null>;
  /** raiseAlert for each, in input order: on SQLite all in one transaction. */
  raiseAlerts(items: readonly AlertToRaise[]): Promise<Array<AlertView | null>>;
  /** refreshAlert for each: on SQLite one statement. */
  refreshAlerts(items: ReadonlyArray<{ id: string; refresh: AlertRefresh }>): Promise<void>;
  /** The newest `limit` events of each lock, newest first (listEvents with lockId, for many locks at once). */
  recentEvents(lockIds: readonly string[], limit: number): Promise<Map<string, LockEvent[]>>;
  resolveAlert(id: string, at: Date, outbox: OutboxItem[]): Promise<AlertView | null>;
  acknowledgeAlert(id: string, by: string, at: Date, outbox: OutboxItem[]): Promise<AlertView | null>;
  listAlerts(q: { state?: string; limit: number }): Promise<AlertView[]>;
  /** An open alert whose condition holds again: its latest message and when it was last seen; no webhook. */
  refreshAlert(id: string, r: AlertRefresh): Promise<void>;
  /** Undelivered rows due at `now`, oldest first, leaving out those another dashboard has claimed until after now. */
  dueDeliveries(now: Date, limit: number): Promise<PendingDelivery[]>;
  /**
   * Claims one row for `by` until `until`, in one conditional UPDATE (still undelivered, unclaimed or its claim run
   * out at `now`): of several dashboards racing for a row, exactly one gets true. Only the claimant sends it.
   */
  claimDelivery(id: string, by: string, until: Date, now: Date): Promise<boolean>;
  markDelivered(id: string, at: Date): Promise<void>;
  markFailed(id: string, error: string, nextAttemptAt: Date): Promise<void>;
  pendingDeliveries(): Promise<number>;
  /** Events of a window for history charts (bounded). */
  eventsInWindow(q: { lockId?: string; since: Date; types?: string[]; limit: number }): Promise<LockEvent[]>;
  hourlyRollups(since: Date): Promise<ResourceHourRow[]>;
  /** Deletes raw events older than `before`, in small batches; returns how many went. */
  pruneEvents(before: Date, batch: number): Promise<number>;
  /** Deletes rollups, delivered webhooks and resolved alerts older than `before`. */
  pruneAggregates(before: Date): Promise<number>;
  addAudit(entry: NewAuditEntry): Promise<AuditEntryView>;
  listAudit(query: AuditQuery): Promise<AuditEntryView[]>;
  /** Stores events once each (idempotent on the agent-assigned id): the ids now stored, and which were new. */
  saveEvents(events: readonly LockEvent[]): Promise<{ stored: string[]; fresh: LockEvent[] }>;
  listEvents(query: EventQuery): Promise<LockEvent[]>;
  countEvents(): Promise<number>;
  touchAgent(agent: { id: string; name: string; version: string }): Promise<void>;
  close(): Promise<void>;
}

/**
 * Events per transaction: several agents' batches (1,000 each, coalesced by group-commit.ts) in one, while keeping
 * each statement bounded (PostgreSQL: one jsonb parameter of about 4 MB at 10,000 events).
 */
export const EVENTS_PER_WRITE: Record<DatabaseProvider, number> = { sqlite: 5000, postgresql: 10_000 };
const CHUNK = EVENTS_PER_WRITE;

/**
 * Opens the history store named by DATABASE_URL: an SQLite file, or a PostgreSQL server through @prisma/adapter-pg.
 * The PostgreSQL client is generated from prisma/postgres/schema.prisma, whose models the drift test keeps identical
 * to prisma/schema.prisma, so both clients have the same API and this module uses one type for both.
 */
export function openStore(databaseUrl: string | undefined, opts: { log?: (line: string) => void } = {}): HistoryStore {
  const target = parseDatabaseUrl(databaseUrl);
  let prisma: PrismaClient;
  let ready: Promise<void> = Promise.resolve();
  // PostgreSQL: one pg pool, shared by Prisma (through its adapter) and the event ingest, which writes through pg
  // itself (see saveBatchPostgres).
  let pool: pg.Pool | null = null;
  let sqliteIngest: SqliteIngest | null = null;
  let sqliteAlerts: SqliteAlerts | null = null;
  if (target.provider === "postgresql") {
    pool = new pg.Pool({ connectionString: target.url, application_name: "lockscope-dashboard" });
    // An idle connection that the server ends (a restart, a failover, pg_terminate_backend, a proxy's idle timeout)
    // is reported as the pool's 'error' event, which without a listener ends the process. Prisma's adapter listens
    // only between its first query and $disconnect, and the ingest uses the pool before that: the pool drops the
    // connection and the next query opens another, so a log line is all this needs.
    pool.on("error", (err: Error) => opts.log?.(`history store: idle PostgreSQL connection lost: ${err.message}`));
    prisma = new PostgresPrismaClient({ adapter: new PrismaPg(pool) }) as unknown as PrismaClient;
  } else {
    const file = target.url.slice("file:".length);
    if (file && file !== ":memory:") mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const adapter = new SharedSqliteAdapter({ url: target.url });
    prisma = new PrismaClient({ adapter });
    // The pragmas are the connection's first statements, so the shared handle exists once they have run.
    ready = sqlitePragmas(prisma).then(() => {
      sqliteIngest = new SqliteIngest(adapter.connection());
      sqliteAlerts = new SqliteAlerts(adapter.connection());
    });
  }
  const provider = target.provider;
  // A failure is reported by every call (below), not as an unhandled rejection at start.
  ready.catch(() => undefined);
  return afterReady(ready, {
    async saveEvents(events) {
      const stored: string[] = [];
      const freshAll: LockEvent[] = [];
      const size = CHUNK[provider];
      await ready;
      for (let i = 0; i < events.length; i += size) {
        const chunk = dedupe(events.slice(i, i + size));
        const fresh = pool ? await saveBatchPostgres(pool, chunk) : await sqliteIngest!.save(chunk);
        freshAll.push(...fresh);
        stored.push(...chunk.map((e) => e.id));
      }
      return { stored, fresh: freshAll };
    },
    async listEvents(q) {
      const rows = await prisma.event.findMany({
        where: {
          ...(q.lockId ? { lockId: q.lockId } : {}),
          ...(q.resource ? { resource: q.resource } : {}),
          ...(q.backend ? { backend: q.backend } : {}),
          ...(q.since ? { at: { gte: q.since } } : {}),
          ...(q.types ? { type: { in: q.types } } : {}),
          // Several events share a millisecond (a release and the next acquire seen in one read): the id breaks
          // the tie, so a page boundary between them neither skips nor repeats one.
          ...(q.before ? { OR: [{ at: { lt: q.before.at } }, { at: q.before.at, id: { lt: q.before.id } }] } : {}),
        },
        orderBy: [{ at: "desc" }, { id: "desc" }],
        take: q.limit,
      });
      return rows.map(fromRow);
    },
    countEvents: () => prisma.event.count(),
    async touchAgent(a) {
      const now = new Date();
      await prisma.agent.upsert({
        where: { id: a.id },
        create: { id: a.id, name: a.name, version: a.version, lastSeen: now },
        update: { name: a.name, version: a.version, lastSeen: now },
      });
    },
    async addAudit(e) {
      const row = await prisma.auditEntry.create({
        data: { ...e, id: randomUUID(), perNode: JSON.stringify(e.perNode) },
      });
      return auditFromRow(row);
    },
    async listAudit(q) {
      const rows = await prisma.auditEntry.findMany({
        where: {
          ...(q.actor ? { actor: q.actor } : {}),
          ...(q.outcome ? { outcome: q.outcome } : {}),
          ...(q.resource ? { resource: { contains: q.resource } } : {}),
          ...(q.since ? { at: { gte: q.since } } : {}),
        },
        orderBy: { at: "desc" },
        take: q.limit,
      });
      return rows.map(auditFromRow);
    },
    async openAlerts() {
      const rows = await prisma.alert.findMany({ where: { state: { in: UNRESOLVED } } });
      return rows.map(alertFromRow);
    },
    async openAlertStates() {
      if (sqliteAlerts) {
        const all: OpenAlertState[] = [];
        for (let after = 0; ;) {
          const page = await sqliteAlerts.run((a) => a.openStates(after, OPEN_ALERTS_PAGE));
          all.push(...page.rows);
          if (page.rows.length < OPEN_ALERTS_PAGE) return all;
          after = page.last;
          await turn();
        }
      }
      if (pool) {
        // One statement that leaves the evidence on the server but for its `seen` part; evidence that is not JSON
        // (written by hand) fails it, and the full read below takes over.
        const rows = await pool.query(OPEN_ALERT_STATES_POSTGRES).catch(() => null);
        if (rows) return rows.rows.map((r: Record<string, unknown>) => openAlertState(r, parseSeen(r.seen)));
      }
      return (await this.openAlerts()).map(openAlertStateOf);
    },
    countOpenAlerts: () => prisma.alert.count({ where: { state: "open" } }),
    async findAlert(id) {
      const row = await prisma.alert.findUnique({ where: { id } });
      return row ? alertFromRow(row) : null;
    },
    async raiseAlerts(items) {
      if (sqliteAlerts) return sqliteAlerts.run((a) => a.raise(items));
      const out: Array<AlertView | null> = [];
      for (const i of items) out.push(await this.raiseAlert(i.alert, i.outbox));
      return out;
    },
    async refreshAlerts(items) {
      if (sqliteAlerts) return sqliteAlerts.run((a) => a.refresh(items));
      if (pool && items.length > 0) {
        const done = await pool
          .query(REFRESH_ALERTS_POSTGRES, [
            items.map((i) => i.id),
            items.map((i) => i.refresh.message),
            items.map((i) => i.refresh.severity),
            items.map((i) => JSON.stringify(i.refresh)),
          ])
          .then(
            () => true,
            () => false,
          );
        // A batch holding an alert whose evidence is not JSON (written by hand) fails whole: one at a time then.
        if (done) return;
      }
      for (const i of items) await this.refreshAlert(i.id, i.refresh);
    },
    async recentEvents(lockIds, limit) {
      if (sqliteAlerts) return sqliteAlerts.run((a) => a.recentEvents(lockIds, limit));
      const out = new Map<string, LockEvent[]>();
      for (const id of new Set(lockIds)) out.set(id, await this.listEvents({ lockId: id, limit }));
      return out;
    },
    async raiseAlert(a, outbox) {
      if (sqliteAlerts) return (await sqliteAlerts.run((s) => s.raise([{ alert: a, outbox }])))[0]!;
      const id = randomUUID();
      try {
        const row = await prisma.$transaction(async (tx) => {
          const created = await tx.alert.create({
            data: { ...a, id, state: "open", evidence: JSON.stringify(a.evidence) },
          });
          await addOutbox(tx, id, outbox(id));
          return created;
        });
        return alertFromRow(row);
      } catch (err) {
        // Two evaluations at once (one outlived the leader's lease): the partial unique index on the unresolved
        // alert's key (migration 20261201160000_open_alert_key) let the first one in and rolled this one back,
        // outbox rows included, so its webhook is not queued twice. Any other failure is still an error.
        if (
          isUniqueViolation(err) &&
          (await prisma.alert.count({ where: { key: a.key, state: { in: UNRESOLVED } } }))
        ) {
          return null;
        }
        throw err;
      }
    },
    async resolveAlert(id, at, outbox) {
      const row = await prisma.$transaction(async (tx) => {
        const updated = await tx.alert.updateMany({
          where: { id, state: { in: UNRESOLVED } },
          data: { state: "resolved", resolvedAt: at },
        });
        if (updated.count === 0) return null;
        await addOutbox(tx, id, outbox);
        return tx.alert.findUnique({ where: { id } });
      });
      return row ? alertFromRow(row) : null;
    },
    async acknowledgeAlert(id, by, at, outbox) {
      const row = await prisma.$transaction(async (tx) => {
        const updated = await tx.alert.updateMany({
          where: { id, state: "open" },
          data: { state: "acknowledged", ackedAt: at, ackedBy: by },
        });
        if (updated.count === 0) return null;
        await addOutbox(tx, id, outbox);
        return tx.alert.findUnique({ where: { id } });
      });
      return row ? alertFromRow(row) : null;
    },
    async refreshAlert(id, r) {
      if (sqliteAlerts) return sqliteAlerts.run((a) => a.refresh([{ id, refresh: r }]));
      await prisma.$transaction(async (tx) => {
        const row = await tx.alert.findUnique({ where: { id }, select: { evidence: true } });
        if (!row) return;
        // Kept inside the evidence JSON rather than new columns: no migration for the two stores, and the evidence
        // is what an operator reads anyway. The first raise's events stay as they were.
        const evidence = { ...parseEvidence(row.evidence), seen: { ...r } };
        await tx.alert.updateMany({
          where: { id, state: { in: UNRESOLVED } },
          data: { message: r.message, severity: r.severity, evidence: JSON.stringify(evidence) },
        });
      });
    },
    async listAlerts(q) {
      const rows = await prisma.alert.findMany({
        where: q.state ? { state: q.state } : {},
        orderBy: [{ raisedAt: "desc" }],
        take: q.limit,
      });
      // Open first, then acknowledged, then resolved; newest first within each.
      const rank: Record<string, number> = { open: 0, acknowledged: 1, resolved: 2 };
      return rows.map(alertFromRow).sort((a, b) => rank[a.state]! - rank[b.state]!);
    },
    async dueDeliveries(now, limit) {
      const rows = await prisma.outboxMessage.findMany({
        where: {
          deliveredAt: null,
          nextAttemptAt: { lte: now },
          OR: [{ claimedUntil: null }, { claimedUntil: { lt: now } }],
        },
        orderBy: { createdAt: "asc" },
        take: limit,
      });
      return rows.map((r) => ({ id: r.id, url: r.url, body: r.body, attempts: r.attempts }));
    },
    async claimDelivery(id, by, until, now) {
      // One conditional UPDATE. PostgreSQL (READ COMMITTED) makes a second claimant wait for the first one's row
      // lock and then re-checks the WHERE on the row as committed, which no longer matches: written as SQL so it
      // is certainly one statement. SQLite runs the write under its single writer lock. Either way the count is 1
      // for exactly one dashboard.
      if (provider === "postgresql") {
        const count = await prisma.$executeRaw`UPDATE "OutboxMessage"
          SET "claimedBy" = ${by}, "claimedUntil" = ${until.toISOString()}::timestamptz AT TIME ZONE 'UTC'
          WHERE "id" = ${id} AND "deliveredAt" IS NULL
            AND ("claimedUntil" IS NULL OR "claimedUntil" < ${now.toISOString()}::timestamptz AT TIME ZONE 'UTC')`;
        return count === 1;
      }
      const { count } = await prisma.outboxMessage.updateMany({
        where: { id, deliveredAt: null, OR: [{ claimedUntil: null }, { claimedUntil: { lt: now } }] },
        data: { claimedBy: by, claimedUntil: until },
      });
      return count === 1;
    },
    async markDelivered(id, at) {
      // claimedBy stays: it says which dashboard sent it.
      await prisma.outboxMessage.update({
        where: { id },
        data: { deliveredAt: at, claimedUntil: null, attempts: { increment: 1 } },
      });
    },
    async markFailed(id, error, nextAttemptAt) {
      // The claim ends with the attempt: the retry is for whichever dashboard leads at nextAttemptAt.
      await prisma.outboxMessage.update({
        where: { id },
        data: { lastError: error.slice(0, 500), nextAttemptAt, claimedUntil: null, attempts: { increment: 1 } },
      });
    },
    pendingDeliveries: () => prisma.outboxMessage.count({ where: { deliveredAt: null } }),
    async eventsInWindow(q) {
      const rows = await prisma.event.findMany({
        where: {
          at: { gte: q.since },
          ...(q.lockId ? { lockId: q.lockId } : {}),
          ...(q.types ? { type: { in: q.types } } : {}),
        },
        orderBy: { at: "asc" },
        take: q.limit,
      });
      return rows.map(fromRow);
    },
    hourlyRollups: (since) => prisma.resourceHour.findMany({ where: { hour: { gte: since } } }),
    async pruneEvents(before, batch) {
      const old = await prisma.event.findMany({ where: { at: { lt: before } }, select: { id: true }, take: batch });
      if (old.length === 0) return 0;
      const { count } = await prisma.event.deleteMany({ where: { id: { in: old.map((o) => o.id) } } });
      return count;
    },
    async pruneAggregates(before) {
      const [a, b, c] = await prisma.$transaction([
        prisma.resourceHour.deleteMany({ where: { hour: { lt: before } } }),
        prisma.outboxMessage.deleteMany({ where: { deliveredAt: { lt: before } } }),
        prisma.alert.deleteMany({ where: { state: "resolved", resolvedAt: { lt: before } } }),
      ]);
      return a.count + b.count + c.count;
    },
    async createSession(x) {
      await prisma.session.create({
        data: {
          ...x,
          createdAt: new Date(x.createdAt),
          expiresAt: new Date(x.expiresAt),
          revokedAt: x.revokedAt === null ? null : new Date(x.revokedAt),
        },
      });
    },
    async findSession(id) {
      const row = await prisma.session.findUnique({ where: { id } });
      return row ? sessionFromRow(row) : null;
    },
    async revokeSession(id, at) {
      await prisma.session.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date(at) } });
    },
    async sessionsCreatedSince(since, now) {
      const rows = await prisma.session.findMany({
        where: { createdAt: { gte: new Date(since) }, revokedAt: null, expiresAt: { gt: new Date(now) } },
      });
      return rows.map(sessionFromRow);
    },
    async sessionsRevokedSince(since) {
      const rows = await prisma.session.findMany({
        where: { revokedAt: { gte: new Date(since) } },
        select: { id: true },
      });
      return rows.map((r) => r.id);
    },
    async pruneSessions(before) {
      const { count } = await prisma.session.deleteMany({ where: { expiresAt: { lt: new Date(before) } } });
      return count;
    },
    async close() {
      await prisma.$disconnect();
      await pool?.end();
    },
  });
}

/**
 * Every method of the store waits for the connection's pragmas first: Prisma runs one SQLite connection, and a
 * `PRAGMA synchronous` that lands inside another call's transaction fails ("Safety level may not be changed inside a
 * transaction": seen in CI when an alert's transaction started before the pragmas had run).
 */
function afterReady<T extends object>(ready: Promise<void>, store: T): T {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(store)) {
    out[name] =
      typeof value === "function"
        ? async (...args: unknown[]) => {
            await ready;
            return (value as (...a: unknown[]) => unknown).apply(store, args);
          }
        : value;
  }
  return out as T;
}

/** The alert states the unique index on the key covers: at most one such alert per key. */
const UNRESOLVED = ["open", "acknowledged"];

/** Prisma's "unique constraint failed" (P2002), from either generated client. */
function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "P2002";
}

function sessionFromRow(r: SessionRow): Session {
  return {
    ...r,
    role: r.role as Role,
    createdAt: r.createdAt.getTime(),
    expiresAt: r.expiresAt.getTime(),
    revokedAt: r.revokedAt ? r.revokedAt.getTime() : null,
  };
}

/**
 * PostgreSQL: a whole batch in ONE statement, so no interactive transaction holds a pooled connection across
 * round trips while twenty agents wait for theirs (measured: 2.5 s p50 per message that way, under load). Data-
 * modifying CTEs run atomically: the events not stored yet are inserted (ON CONFLICT DO NOTHING, in id order so
 * overlapping batches from two dashboards wait instead of deadlocking), and only those add to the hourly rollups,
 * summed per lock and hour in the same statement. The inserted ids come back as the result.
 *
 * Sent through pg itself, not Prisma's $queryRaw: the rows go as one array per column (unnest), a prepared
 * statement (parsed and planned once per connection). Through Prisma the same statement cost the dashboard about
 * 40 ms of CPU per 1,000 events (its query interpreter copies the 4 MB parameter and maps every returned row),
 * which at 20,000 events/s is most of the one core the dashboard's JavaScript has.
 */
/**
 * How a batch's counts add to an hourly rollup row that exists: the same in both engines, but for the name of the
 * two-argument maximum (PostgreSQL GREATEST, SQLite's scalar MAX). A constant, never user input.
 */
function addToRollup(max: "GREATEST" | "MAX"): string {
  const add = ["acquisitions", "releases", "expiries", "ownerChanges", "holdCount", "holdMsSum"].map(
    (c) => `"${c}" = "ResourceHour"."${c}" + excluded."${c}"`,
  );
  return `ON CONFLICT ("lockId", "hour") DO UPDATE SET ${add.join(", ")}, "holdMsMax" = ${max}("ResourceHour"."holdMsMax", excluded."holdMsMax")`;
}

const SAVE_EVENTS_POSTGRES = `WITH x AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::integer[], $12::timestamptz[], $13::text[], $14::timestamptz[], $15::integer[], $16::integer[], $17::integer[], $18::integer[], $19::integer[], $20::double precision[], $21::double precision[])
      AS x("id", "agentId", "type", "lockId", "backend", "source", "resource", "owner", "previousOwner", "library", "ttlMs", "at", "detail", "hour", "acquisitions", "releases", "expiries", "ownerChanges", "holdCount", "holdMsSum", "holdMsMax")
  ), ins AS (
    INSERT INTO "Event" ("id", "agentId", "type", "lockId", "backend", "source", "resource", "owner", "previousOwner", "library", "ttlMs", "at", "receivedAt", "detail")
    SELECT "id", "agentId", "type", "lockId", "backend", "source", "resource", "owner", "previousOwner", "library", "ttlMs", "at" AT TIME ZONE 'UTC', $22::timestamptz AT TIME ZONE 'UTC', "detail"
    FROM x ORDER BY "id"
    ON CONFLICT ("id") DO NOTHING RETURNING "id"
  ), roll AS (
    INSERT INTO "ResourceHour" ("lockId", "resource", "backend", "hour", "acquisitions", "releases", "expiries", "ownerChanges", "holdCount", "holdMsSum", "holdMsMax")
    SELECT x."lockId", min(x."resource"), min(x."backend"), x."hour" AT TIME ZONE 'UTC', sum(x."acquisitions"), sum(x."releases"), sum(x."expiries"), sum(x."ownerChanges"), sum(x."holdCount"), sum(x."holdMsSum"), max(x."holdMsMax")
    FROM x JOIN ins ON ins."id" = x."id"
    WHERE x."hour" IS NOT NULL
    GROUP BY x."lockId", x."hour"
    ORDER BY x."lockId", x."hour"
    ${addToRollup("GREATEST")}
    RETURNING 1
  )
  SELECT "id" FROM ins`;

async function saveBatchPostgres(pool: pg.Pool, chunk: LockEvent[]): Promise<LockEvent[]> {
  if (chunk.length === 0) return [];
  const n = chunk.length;
  const cols: unknown[][] = Array.from({ length: 21 }, () => new Array<unknown>(n));
  for (let i = 0; i < n; i++) {
    const e = chunk[i]!;
    const c = contribution(e);
    const k = c?.counts;
    cols[0]![i] = e.id;
    cols[1]![i] = e.agentId;
    cols[2]![i] = e.type;
    cols[3]![i] = e.lockId;
    cols[4]![i] = e.backend;
    cols[5]![i] = e.source;
    cols[6]![i] = e.resource;
    cols[7]![i] = e.owner;
    cols[8]![i] = e.previousOwner ?? null;
    cols[9]![i] = e.library ?? null;
    cols[10]![i] = e.ttlMs ?? null;
    cols[11]![i] = new Date(e.at).toISOString();
    cols[12]![i] = e.detail ? JSON.stringify(e.detail) : null;
    cols[13]![i] = c ? c.hour.toISOString() : null;
    cols[14]![i] = k?.acquisitions ?? null;
    cols[15]![i] = k?.releases ?? null;
    cols[16]![i] = k?.expiries ?? null;
    cols[17]![i] = k?.ownerChanges ?? null;
    cols[18]![i] = k?.holdCount ?? null;
    cols[19]![i] = k?.holdMsSum ?? null;
    cols[20]![i] = k?.holdMsMax ?? null;
  }
  const { rows } = await pool.query<[string]>({
    name: "lockscope-save-events",
    text: SAVE_EVENTS_POSTGRES,
    values: [...cols, new Date().toISOString()],
    rowMode: "array",
  });
  const fresh = new Set(rows.map((r) => r[0]));
  return chunk.filter((e) => fresh.has(e.id));
}

/**
 * How each engine keeps a DateTime written by Prisma: SQLite as ISO text with an explicit +00:00 offset (what the
 * better-sqlite3 adapter writes and compares as text), PostgreSQL as TIMESTAMP(3) holding UTC.
 */
function sqlTime(provider: DatabaseProvider, d: Date): string {
  const iso = d.toISOString();
  return provider === "sqlite" ? `${iso.slice(0, -1)}+00:00` : iso;
}

/**
 * The connection Prisma's better-sqlite3 adapter opens, kept so that the store's hot path (SqliteIngest) runs its
 * statements on that same connection. A second connection to the file would take turns with Prisma's for SQLite's
 * one write lock, and better-sqlite3 waits for a busy lock by sleeping the thread, event loop and all. The adapter
 * (6.19.3, pinned) keeps the better-sqlite3 Database as `client`; if a later version does not, the store fails at
 * its first call with that said, not later with a wrong connection (tests/integration/store.test.ts opens a store).
 */
class SharedSqliteAdapter extends PrismaBetterSQLite3 {
  private db: BetterSqlite3.Database | null = null;

  override async connect(): ReturnType<PrismaBetterSQLite3["connect"]> {
    const adapter = await super.connect();
    const client = (adapter as unknown as { client?: unknown }).client;
    if (client && typeof (client as BetterSqlite3.Database).prepare === "function") {
      this.db = client as BetterSqlite3.Database;
    }
    return adapter;
  }

  connection(): BetterSqlite3.Database {
    if (!this.db) {
      throw new Error(
        "the SQLite adapter exposes no better-sqlite3 connection (an @prisma/adapter-better-sqlite3 upgrade?)",
      );
    }
    return this.db;
  }
}

/**
 * Events per SQLite transaction, adapted to how long one takes. better-sqlite3 runs a statement synchronously, so a
 * transaction holds the event loop from BEGIN to COMMIT: 1,000 events through Prisma's raw query held it 55 ms (p50;
 * 144 ms at worst, 100,000 events into a fresh file), and an API request or a browser's update that arrived meanwhile
 * waited for all of it. What an event costs depends on where it lands: events of the same few locks append to the
 * Event table's indexes (about 25 µs each here), while an agent's first contact with 100,000 locks puts each of them
 * on a random page of the lockId, resource and time indexes, and SQLite then writes (and checkpoints) a whole page per
 * index per event: 250 such events took 22 to 40 ms a transaction (scratches on a real file, load 2 to 3). So each
 * transaction takes as many events as fit in SQLITE_TRANSACTION_TARGET_MS at the rate the last ones ran, between
 * the bounds below, and the loop turns between two. The commit's fsync (synchronous FULL) measured 0.3 ms here, so
 * more commits cost little next to the page writes.
 */
export const SQLITE_EVENTS_PER_TRANSACTION = { first: 250, min: 25, max: 2000 };
/** What one ingest transaction aims to hold the event loop for. */
export const SQLITE_TRANSACTION_TARGET_MS = 10;
/**
 * Unresolved alerts read per statement, a turn of the event loop between two: about 6 ms each in a scratch read of
 * alerts with 1.2 kB of evidence (12 µs a row, most of it the evidence's JSON for its `seen` part). 2,000 a page
 * held the loop about 25 ms, and at 100,000 locks a lock event's delivery waited behind such pages.
 */
const OPEN_ALERTS_PAGE = 500;

/**
 * SQLite's event ingest: the events not stored yet are inserted and returned, in input order, with their hourly
 * rollups added in the same transaction (counted once, since only fresh events count, so a retried batch neither
 * loses nor doubles a count). One INSERT per transaction, whose rows arrive as one JSON parameter read by json_each
 * instead of 13 bound values per event, since building and binding those cost more than the insert itself; ON
 * CONFLICT DO NOTHING RETURNING says what is new. Straight on the shared connection with prepared statements, not
 * through Prisma: its query compiler and driver adapter (a statement prepared anew per call, every parameter copied
 * into its WebAssembly and back) cost three times the insert itself.
 */
export class SqliteIngest {
  private readonly insert: BetterSqlite3.Statement;
  private readonly addRollups: BetterSqlite3.Statement;

  /** Events in the next transaction: adapted after each one (see SQLITE_EVENTS_PER_TRANSACTION). */
  private size = SQLITE_EVENTS_PER_TRANSACTION.first;

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.insert = db
      .prepare(
        `INSERT INTO "Event" ("id", "agentId", "type", "lockId", "backend", "source", "resource", "owner", "previousOwner", "library", "ttlMs", "at", "receivedAt", "detail")
    SELECT value ->> 'id', value ->> 'agentId', value ->> 'type', value ->> 'lockId', value ->> 'backend', value ->> 'source', value ->> 'resource', value ->> 'owner', value ->> 'previousOwner', value ->> 'library', value ->> 'ttlMs', value ->> 'at', value ->> 'receivedAt', value ->> 'detail'
    FROM json_each(?) WHERE true
    ON CONFLICT ("id") DO NOTHING RETURNING "id"`,
      )
      .pluck()
      .safeIntegers(false);
    this.addRollups =
      db.prepare(`INSERT INTO "ResourceHour" ("lockId", "resource", "backend", "hour", "acquisitions", "releases", "expiries", "ownerChanges", "holdCount", "holdMsSum", "holdMsMax")
    SELECT value ->> 'lockId', value ->> 'resource', value ->> 'backend', value ->> 'hour', value ->> 'acquisitions', value ->> 'releases', value ->> 'expiries', value ->> 'ownerChanges', value ->> 'holdCount', value ->> 'holdMsSum', value ->> 'holdMsMax'
    FROM json_each(?) WHERE true
    ${addToRollup("MAX")}`);
  }

  /** Stores one batch (deduplicated by the caller): the fresh events, in input order. */
  async save(events: readonly LockEvent[]): Promise<LockEvent[]> {
    const fresh: LockEvent[] = [];
    for (let i = 0; i < events.length;) {
      if (i > 0) await turn();
      await connectionIdle(this.db);
      const chunk = events.slice(i, i + this.size);
      const started = this.clock();
      fresh.push(...this.write(chunk));
      this.adapt(chunk.length, this.clock() - started);
      i += chunk.length;
    }
    return fresh;
  }

  /** The next transaction's size from this one's rate, halfway from the old size (one slow commit is not a trend). */
  private adapt(events: number, ms: number): void {
    const { min, max } = SQLITE_EVENTS_PER_TRANSACTION;
    // A small transaction says little about the rate; a fast one of any size may grow the next.
    if (events < this.size && ms < SQLITE_TRANSACTION_TARGET_MS) return;
    const fits = ms > 0 ? (events * SQLITE_TRANSACTION_TARGET_MS) / ms : max;
    this.size = Math.round(Math.min(max, Math.max(min, (this.size + fits) / 2)));
  }

  /** Events the next transaction takes (for tests). */
  get transactionSize(): number {
    return this.size;
  }

  private write(chunk: readonly LockEvent[]): LockEvent[] {
    if (chunk.length === 0) return [];
    const receivedAt = sqliteTime(new Date().toISOString());
    const rows = JSON.stringify(chunk.map((e) => ({ ...toRow(e), at: sqliteTime(e.at), receivedAt })));
    return this.db.transaction(() => {
      const inserted = new Set(this.insert.all(rows) as string[]);
      const fresh = chunk.filter((e) => inserted.has(e.id));
      const rolled = rollup(fresh);
      if (rolled.length > 0) {
        this.addRollups.run(JSON.stringify(rolled.map((r) => ({ ...r, hour: sqlTime("sqlite", r.hour) }))));
      }
      return fresh;
    })();
  }
}

/** One turn of the event loop (better-sqlite3 answers synchronously: awaiting it alone never lets anything else run). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Waits until no transaction is open on the shared connection. Prisma's interactive transactions (an alert
 * acknowledged with its webhooks) run across awaits: a statement of ours issued while one is open would join it, and
 * go with its rollback. Ours never stay open across an await (better-sqlite3 runs a whole transaction at once).
 */
async function connectionIdle(db: BetterSqlite3.Database): Promise<void> {
  while (db.inTransaction) await turn();
}

/** Prisma's SQLite text for a DateTime, from an ISO time (the agents' and the store's own). */
function sqliteTime(iso: string): string {
  return ISO_UTC.test(iso) ? `${iso.slice(0, -1)}+00:00` : sqlTime("sqlite", new Date(iso));
}
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The `seen` part of an alert's evidence, as json_extract gives it (JSON text of an object, or anything else). */
function parseSeen(raw: unknown): Partial<Record<keyof AlertRefresh, unknown>> {
  if (typeof raw !== "string") return {};
  try {
    const v: unknown = JSON.parse(raw);
    return v && typeof v === "object" ? (v as Partial<Record<keyof AlertRefresh, unknown>>) : {};
  } catch {
    return {};
  }
}

/** An unresolved alert's state from a row of its columns (raisedAt as a Date) and its evidence's `seen` part. */
function openAlertState(
  r: Record<string, unknown>,
  seen: Partial<Record<keyof AlertRefresh, unknown>>,
): OpenAlertState {
  const raisedAt = (r.raisedAt as Date).toISOString();
  return {
    id: r.id as string,
    key: r.key as string,
    rule: r.rule as string,
    severity: r.severity as Severity,
    state: r.state as AlertState,
    lockId: r.lockId as string | null,
    backend: r.backend as Backend | null,
    source: r.source as string,
    resource: r.resource as string | null,
    message: r.message as string,
    raisedAt,
    lastSeenAt: typeof seen.lastSeenAt === "string" ? seen.lastSeenAt : raisedAt,
    occurrences: typeof seen.occurrences === "number" ? seen.occurrences : 1,
    latestHolder: typeof seen.latestHolder === "string" ? seen.latestHolder : null,
  };
}

/**
 * PostgreSQL: what an evaluation reads of the unresolved alerts, the evidence's `seen` part only (the rest of it, the
 * bulk of a row, stays on the server). The evidence column is text written by JSON.stringify.
 */
const OPEN_ALERT_STATES_POSTGRES = `SELECT "id", "key", "rule", "severity", "state", "lockId", "backend", "source",
    "resource", "message", "raisedAt" AT TIME ZONE 'UTC' AS "raisedAt", ("evidence"::jsonb -> 'seen')::text AS "seen"
  FROM "Alert" WHERE "state" IN ('open', 'acknowledged')`;

/**
 * PostgreSQL: refreshAlert for a batch in one statement (the latest message and severity, `seen` set inside the
 * evidence, kept as an object; jsonb writes the evidence back with its keys in its own order). Per alert it was a
 * Prisma transaction of two round trips: at 15,000 open alerts, refreshed every 15 s, more than an evaluation could do.
 */
const REFRESH_ALERTS_POSTGRES = `UPDATE "Alert" AS a SET "message" = x."message", "severity" = x."severity",
    "evidence" = ((CASE WHEN jsonb_typeof(a."evidence"::jsonb) = 'object' THEN a."evidence"::jsonb ELSE '{}'::jsonb END)
      || jsonb_build_object('seen', x."seen"::jsonb))::text
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x("id", "message", "severity", "seen")
  WHERE a."id" = x."id" AND a."state" IN ('open', 'acknowledged')`;

/**
 * SQLite's alert reads and writes for an evaluation, on the shared connection with prepared statements (see
 * SqliteIngest for why not through Prisma). A fleet with 15,000 locks without a TTL has 15,000 open alerts: each
 * evaluation read them all (their evidence JSON parsed), and each 15 s every one was refreshed in a transaction of
 * its own, about 1.1 ms of the event loop each through Prisma (a scratch on a real file): more than a core for
 * nothing but "last seen". Here an evaluation reads the open alerts without their evidence (its `seen` part
 * extracted by SQLite), refreshes a batch in one UPDATE, and raises a batch in one transaction.
 */
export class SqliteAlerts {
  private readonly selectOpen: BetterSqlite3.Statement;
  private readonly insertAlert: BetterSqlite3.Statement;
  private readonly insertOutbox: BetterSqlite3.Statement;
  private readonly updateSeen: BetterSqlite3.Statement;
  private readonly selectRecent: BetterSqlite3.Statement;

  constructor(private readonly db: BetterSqlite3.Database) {
    // json_extract on text that is not JSON is an error: guarded, as parseEvidence is. Paged by rowid, so that
    // 15,000 open alerts (40 to 70 ms to read here) never hold the event loop in one stretch.
    this.selectOpen = db
      .prepare(
        `SELECT rowid AS "n", "id", "key", "rule", "severity", "state", "lockId", "backend", "source", "resource", "message",
            "raisedAt", CASE WHEN json_valid("evidence") THEN json_extract("evidence", '$.seen') END AS "seen"
          FROM "Alert" WHERE "state" IN ('open', 'acknowledged') AND rowid > ? ORDER BY rowid LIMIT ?`,
      )
      .safeIntegers(false);
    // DO NOTHING without a target covers the partial unique index on the unresolved key: another evaluation raised
    // it first, and nothing (no webhook either) is written for this one.
    this.insertAlert = db.prepare(
      `INSERT INTO "Alert" ("id", "key", "rule", "severity", "state", "lockId", "backend", "source", "resource", "message", "evidence", "raisedAt")
        VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    );
    this.insertOutbox = db.prepare(
      `INSERT INTO "OutboxMessage" ("id", "createdAt", "alertId", "kind", "url", "body", "attempts", "nextAttemptAt")
        VALUES (?, ?, ?, ?, ?, ?, 0, ?)`,
    );
    // As refreshAlert: the latest message and severity, and `seen` set inside the evidence (kept as an object). One
    // primary-key update per alert in one transaction: an UPDATE … FROM json_each of the whole batch was planned as
    // a scan of the alerts per batch row (12 ms an alert at 15,000 open).
    this.updateSeen = db.prepare(
      `UPDATE "Alert" SET "message" = ?, "severity" = ?,
          "evidence" = json_set(CASE WHEN json_valid("evidence") AND json_type("evidence") = 'object' THEN "evidence" ELSE '{}' END,
            '$.seen', json(?))
        WHERE "id" = ? AND "state" IN ('open', 'acknowledged')`,
    );
    this.selectRecent = db
      .prepare(
        `SELECT "id", "agentId", "type", "lockId", "backend", "source", "resource", "owner", "previousOwner", "library",
            "ttlMs", "at", "receivedAt", "detail"
          FROM (SELECT *, row_number() OVER (PARTITION BY "lockId" ORDER BY "at" DESC, "id" DESC) AS "n"
            FROM "Event" WHERE "lockId" IN (SELECT value FROM json_each(?)))
          WHERE "n" <= ? ORDER BY "lockId", "n"`,
      )
      .safeIntegers(false);
  }

  /** Runs `fn` once no other transaction is open on the connection. */
  async run<T>(fn: (alerts: this) => T): Promise<T> {
    await connectionIdle(this.db);
    return fn(this);
  }

  /** One page of the unresolved alerts, in rowid order after `after`, and the last rowid read. */
  openStates(after: number, limit: number): { rows: OpenAlertState[]; last: number } {
    let last = after;
    const rows = (this.selectOpen.all(after, limit) as Array<Record<string, unknown>>).map((r) => {
      last = r.n as number;
      return openAlertState({ ...r, raisedAt: new Date(r.raisedAt as string) }, parseSeen(r.seen));
    });
    return { rows, last };
  }

  raise(items: readonly AlertToRaise[]): Array<AlertView | null> {
    return this.db.transaction(() =>
      items.map(({ alert: a, outbox }) => {
        const id = randomUUID();
        const raisedAt = sqliteTime(a.raisedAt.toISOString());
        const evidence = JSON.stringify(a.evidence);
        const inserted = this.insertAlert.run(
          id,
          a.key,
          a.rule,
          a.severity,
          a.lockId,
          a.backend,
          a.source,
          a.resource,
          a.message,
          evidence,
          raisedAt,
        ).changes;
        if (inserted === 0) return null;
        const now = sqliteTime(new Date().toISOString());
        for (const o of outbox(id)) this.insertOutbox.run(randomUUID(), now, id, o.kind, o.url, o.body, now);
        const view: AlertView = {
          ...a,
          id,
          state: "open",
          severity: a.severity as Severity,
          backend: a.backend as Backend | null,
          evidence: JSON.parse(evidence) as Record<string, unknown>,
          raisedAt: a.raisedAt.toISOString(),
          ackedAt: null,
          ackedBy: null,
          resolvedAt: null,
          lastSeenAt: a.raisedAt.toISOString(),
          occurrences: 1,
          latestHolder: null,
        };
        return view;
      }),
    )();
  }

  refresh(items: ReadonlyArray<{ id: string; refresh: AlertRefresh }>): void {
    if (items.length === 0) return;
    this.db.transaction(() => {
      for (const { id, refresh } of items) {
        this.updateSeen.run(refresh.message, refresh.severity, JSON.stringify(refresh), id);
      }
    })();
  }

  recentEvents(lockIds: readonly string[], limit: number): Map<string, LockEvent[]> {
    const out = new Map<string, LockEvent[]>();
    for (const id of lockIds) out.set(id, []);
    if (lockIds.length === 0) return out;
    for (const r of this.selectRecent.all(JSON.stringify([...new Set(lockIds)]), limit) as Array<
      Record<string, unknown>
    >) {
      out
        .get(r.lockId as string)!
        .push(
          fromRow({ ...r, at: new Date(r.at as string), receivedAt: new Date(r.receivedAt as string) } as EventRow),
        );
    }
    return out;
  }
}

/**
 * WAL: readers (the pages, the API) no longer wait for the writer, and a commit appends to one file instead of
 * rewriting a rollback journal, which is most of the cost of a batch of events. synchronous FULL, set, not assumed:
 * an acknowledged event must survive a power cut, since the agent drops it once acknowledged, and a connection to a
 * file already in WAL mode (every start after the first) otherwise runs with NORMAL (measured: 1 after a reopen, 2
 * on a fresh file), where the last commits can be lost.
 */
export async function sqlitePragmas(
  prisma: Pick<PrismaClient, "$queryRawUnsafe" | "$executeRawUnsafe">,
): Promise<void> {
  await prisma.$queryRawUnsafe("PRAGMA journal_mode = WAL");
  await prisma.$executeRawUnsafe("PRAGMA synchronous = FULL");
}

function dedupe(events: LockEvent[]): LockEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => (seen.has(e.id) ? false : (seen.add(e.id), true)));
}

function toRow(e: LockEvent) {
  return {
    id: e.id,
    agentId: e.agentId,
    type: e.type,
    lockId: e.lockId,
    backend: e.backend,
    source: e.source,
    resource: e.resource,
    owner: e.owner,
    previousOwner: e.previousOwner ?? null,
    library: e.library ?? null,
    ttlMs: e.ttlMs ?? null,
    at: new Date(e.at),
    detail: e.detail ? JSON.stringify(e.detail) : null,
  };
}

function fromRow(r: EventRow): LockEvent {
  const e: LockEvent = {
    id: r.id,
    agentId: r.agentId,
    type: r.type as LockEventType,
    lockId: r.lockId,
    backend: r.backend as Backend,
    source: r.source,
    resource: r.resource,
    owner: r.owner,
    at: r.at.toISOString(),
  };
  if (r.previousOwner !== null) e.previousOwner = r.previousOwner;
  if (r.library !== null) e.library = r.library;
  if (r.ttlMs !== null) e.ttlMs = r.ttlMs;
  if (r.detail) {
    try {
      e.detail = JSON.parse(r.detail) as LockEvent["detail"];
    } catch {
      e.detail = { unparsable: r.detail.slice(0, 200) };
    }
  }
  return e;
}

function auditFromRow(r: AuditRow): AuditEntryView {
  let perNode: ReleaseNodeResult[] = [];
  try {
    perNode = r.perNode ? (JSON.parse(r.perNode) as ReleaseNodeResult[]) : [];
  } catch {
    perNode = [];
  }
  return { ...r, at: r.at.toISOString(), outcome: r.outcome as ReleaseOutcome, perNode };
}

type Tx = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];

async function addOutbox(tx: Tx, alertId: string, items: OutboxItem[]): Promise<void> {
  if (items.length === 0) return;
  const now = new Date();
  await tx.outboxMessage.createMany({
    data: items.map((i) => ({ id: randomUUID(), alertId, kind: i.kind, url: i.url, body: i.body, nextAttemptAt: now })),
  });
}

function parseEvidence(raw: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function alertFromRow(r: AlertRow): AlertView {
  const { seen, ...evidence } = parseEvidence(r.evidence);
  const s = (seen ?? {}) as Partial<AlertRefresh>;
  return {
    ...r,
    lastSeenAt: typeof s.lastSeenAt === "string" ? s.lastSeenAt : r.raisedAt.toISOString(),
    occurrences: typeof s.occurrences === "number" ? s.occurrences : 1,
    latestHolder: typeof s.latestHolder === "string" ? s.latestHolder : null,
    severity: r.severity as Severity,
    state: r.state as AlertState,
    backend: r.backend as Backend | null,
    evidence,
    raisedAt: r.raisedAt.toISOString(),
    ackedAt: r.ackedAt?.toISOString() ?? null,
    resolvedAt: r.resolvedAt?.toISOString() ?? null,
  };
}

const HOUR = 3_600_000;

type Counts = Pick<
  ResourceHourRow,
  "acquisitions" | "releases" | "expiries" | "ownerChanges" | "holdCount" | "holdMsSum" | "holdMsMax"
>;

/** What one event adds to its lock's hourly rollup; null for events that are not about a lock. */
export function contribution(e: LockEvent): { hour: Date; counts: Counts } | null {
  if (e.type === "source-down" || e.type === "source-up") return null;
  const hour = new Date(Math.floor(Date.parse(e.at) / HOUR) * HOUR);
  const counts: Counts = {
    acquisitions: e.type === "acquired" || e.type === "owner-changed" ? 1 : 0,
    // An owner change counts as a takeover only when the previous lease had run out; otherwise it is a release
    // and the next acquire seen in one read (a quick handover), which is not contention gone wrong.
    releases: e.type === "released" || (e.type === "owner-changed" && !isTakeover(e)) ? 1 : 0,
    expiries: e.type === "expired" ? 1 : 0,
    ownerChanges: e.type === "owner-changed" && isTakeover(e) ? 1 : 0,
    holdCount: 0,
    holdMsSum: 0,
    holdMsMax: 0,
  };
  const held = e.detail?.heldMs;
  if (typeof held === "number" && held >= 0 && e.type !== "acquired" && e.type !== "renewed") {
    counts.holdCount = 1;
    counts.holdMsSum = held;
    counts.holdMsMax = held;
  }
  return { hour, counts };
}

/** Counts of fresh events per resource and hour. */
export function rollup(events: readonly LockEvent[]): ResourceHourRow[] {
  const rows = new Map<string, ResourceHourRow>();
  for (const e of events) {
    const c = contribution(e);
    if (!c) continue;
    const key = `${e.lockId}\u0000${c.hour.getTime()}`;
    const r = rows.get(key);
    if (!r) {
      rows.set(key, { lockId: e.lockId, resource: e.resource, backend: e.backend, hour: c.hour, ...c.counts });
      continue;
    }
    r.acquisitions += c.counts.acquisitions;
    r.releases += c.counts.releases;
    r.expiries += c.counts.expiries;
    r.ownerChanges += c.counts.ownerChanges;
    r.holdCount += c.counts.holdCount;
    r.holdMsSum += c.counts.holdMsSum;
    r.holdMsMax = Math.max(r.holdMsMax, c.counts.holdMsMax);
  }
  return [...rows.values()];
}
