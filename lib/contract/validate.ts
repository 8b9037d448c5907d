/**
 * Validation of everything that crosses into the dashboard from an agent. The schemas are annotated with the
 * contract's types, so a schema and its type cannot silently drift apart.
 */
import { z } from "zod";

import {
  BACKENDS,
  type DbLockView,
  type Hazard,
  type Lock,
  type LockEvent,
  type QuorumView,
  type SourceStatus,
  type Waiter,
  type ZkLockView,
} from "./lock";
import type { AgentSnapshot, AgentUpdate, ViewSubscribe } from "./socket";

const MAX_TEXT = 4096;
const text = z.string().max(MAX_TEXT);
const isoTime = z
  .string()
  .max(40)
  .refine((s) => !Number.isNaN(Date.parse(s)), "not an ISO time");
const backend = z.enum(BACKENDS);

const hazard: z.ZodType<Hazard> = z.object({
  code: text,
  severity: z.enum(["info", "warning", "critical"]),
  message: text,
});

const waiter: z.ZodType<Waiter> = z.object({ owner: text, since: isoTime.optional(), detail: text.optional() });

const scalar = z.union([text, z.number(), z.boolean()]);

const quorumSchema: z.ZodType<QuorumView> = z.object({
  group: text,
  votes: z.number().int().nonnegative(),
  nodes: z.number().int().nonnegative(),
  needed: z.number().int().nonnegative(),
  state: z.enum(["held", "at-risk", "minority", "split", "quorum-lost", "expired"]),
  validityMs: z.number().nullable(),
  partial: z.boolean(),
  perNode: z
    .array(
      z.object({
        node: text,
        state: z.enum(["up", "down", "slow"]),
        present: z.boolean(),
        token: text.nullable(),
        ttlMs: z.number().int().nullable(),
        latencyMs: z.number().nonnegative().optional(),
        error: text.optional(),
      }),
    )
    .max(64),
});

const zkSchema: z.ZodType<ZkLockView> = z.object({
  recipe: z.string().max(64),
  parent: text,
  watchesObserved: z.boolean(),
  contenders: z
    .array(
      z.object({
        node: text,
        sequence: z.number().int().nullable(),
        session: z.string().max(32),
        ephemeral: z.boolean(),
        ctime: isoTime,
        role: z.enum(["holder", "waiter"]),
        mode: z.enum(["exclusive", "read", "write", "lease", "latch"]),
        waitsFor: text.nullable(),
        watchedBy: z
          .array(z.object({ session: z.string().max(32), host: text.optional(), observed: z.boolean() }))
          .max(10_000),
        dataPreview: text.nullable(),
        host: text.optional(),
      }),
    )
    .max(100_000),
  longWaitMs: z.number().int().nonnegative().optional(),
});

const dbSession = z.object({
  pid: z.number().int().nonnegative(),
  backendStart: z.string().max(64).optional(),
  user: text.nullable(),
  application: text.nullable(),
  client: text.nullable(),
  database: text.nullable(),
  state: text.nullable(),
  xactStart: isoTime.nullable().optional(),
  queryStart: isoTime.nullable().optional(),
  stateChange: isoTime.nullable().optional(),
  query: text.nullable().optional(),
});
const dbMode = z.enum(["exclusive", "shared"]);

const dbSchema: z.ZodType<DbLockView> = z.object({
  engine: z.enum(["postgres", "mysql", "mariadb"]),
  database: text.nullable(),
  keyKind: z.enum(["bigint", "int4-pair", "name"]),
  holders: z
    .array(
      z.object({
        session: dbSession,
        mode: dbMode,
        level: z.enum(["session", "transaction", "unknown"]),
        levelEvidence: text,
      }),
    )
    .max(10_000),
  waiters: z
    .array(
      z.object({
        session: dbSession,
        mode: dbMode,
        since: isoTime.nullable(),
        blockedBy: z.array(z.number().int()).max(10_000),
        chain: z.array(z.number().int()).max(1000),
      }),
    )
    .max(10_000),
});

export const lockSchema: z.ZodType<Lock> = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, "not a URL-safe id"),
  backend,
  source: text,
  resource: text,
  owner: text.nullable(),
  ownerFingerprint: z.string().max(80).optional(),
  library: z.string().max(64),
  rule: z.string().max(128),
  ttlMs: z.number().int().nullable(),
  holder: z.record(z.string().max(64), scalar).nullable(),
  holders: z
    .array(
      z.object({
        owner: text,
        since: isoTime.optional(),
        ttlMs: z.number().int().nullable().optional(),
      }),
    )
    .max(10_000)
    .optional(),
  holdersTotal: z.number().int().nonnegative().optional(),
  waiters: z.array(waiter).max(10_000),
  since: isoTime,
  observedAt: isoTime,
  kind: z.string().max(32),
  valuePreview: text.nullable(),
  hazards: z.array(hazard).max(64),
  agentId: z.string().max(128),
  quorum: quorumSchema.optional(),
  zookeeper: zkSchema.optional(),
  database: dbSchema.optional(),
});

const eventSchema: z.ZodType<LockEvent> = z.object({
  id: z.string().min(8).max(64),
  agentId: z.string().max(128),
  type: z.enum(["acquired", "released", "expired", "renewed", "owner-changed", "lost", "source-down", "source-up"]),
  lockId: z.string().max(128),
  backend,
  source: text,
  resource: text,
  owner: text.nullable(),
  previousOwner: text.nullable().optional(),
  library: z.string().max(64).optional(),
  ttlMs: z.number().int().nullable().optional(),
  at: isoTime,
  detail: z.record(z.string().max(64), z.union([text, z.number(), z.boolean(), z.null()])).optional(),
});

export const sourceSchema: z.ZodType<SourceStatus> = z.object({
  id: text,
  kind: backend,
  up: z.boolean(),
  error: text.optional(),
  locks: z.number().int().nonnegative(),
  untracked: z.number().int().nonnegative().optional(),
  lastScanAt: isoTime.optional(),
  lastScanMs: z.number().nonnegative().optional(),
  scanStepCount: z.number().int().positive().optional(),
  lastSweepMs: z.number().nonnegative().optional(),
  lastPollAt: isoTime.optional(),
  pollIntervalMs: z.number().int().positive().optional(),
  agentId: z.string().max(128),
  nodes: z
    .array(
      z.object({
        id: text,
        role: z.string().max(32),
        up: z.boolean(),
        latencyMs: z.number().nonnegative().optional(),
        offset: z.number().optional(),
        lagBytes: z.number().optional(),
        clockOffsetMs: z.number().optional(),
        error: text.optional(),
        changeDetection: z.enum(["track", "poll"]).optional(),
        note: text.optional(),
      }),
    )
    .max(1000)
    .optional(),
  hazards: z.array(hazard).max(64).optional(),
  changeDetection: z.enum(["track", "poll"]).optional(),
  note: text.optional(),
});

const agentId = z.string().min(1).max(128);

const snapshotSchema: z.ZodType<AgentSnapshot> = z.object({
  agentId,
  agentName: z.string().max(256),
  version: z.string().max(64),
  at: isoTime,
  sources: z.array(sourceSchema).max(1000),
  locks: z.array(lockSchema).max(200_000),
  part: z.object({ index: z.number().int().nonnegative(), last: z.boolean() }).optional(),
});

const updateSchema: z.ZodType<AgentUpdate> = z.object({
  agentId,
  at: isoTime,
  sources: z.array(sourceSchema).max(1000),
  upserts: z.array(lockSchema).max(200_000),
  removed: z.array(z.string().max(128)).max(200_000),
  events: z.array(eventSchema).max(10_000),
});

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

function parseWith<T>(schema: z.ZodType<T>, input: unknown): Parsed<T> {
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  const where = issue?.path.join(".") || "(root)";
  return { ok: false, error: `${where}: ${issue?.message ?? "invalid"}` };
}

/** The schemas alone (zod): what the fast paths below must agree with; the tests compare the two. */
export const parseAgentSnapshotBySchema = (input: unknown) => parseWith(snapshotSchema, input);
export const parseAgentUpdateBySchema = (input: unknown) => parseWith(updateSchema, input);

/*
 * Fast paths for the bulk of agent messages: the events of an update (up to 1,000 per message) and the locks of a
 * snapshot or an update. zod took about 15 ms of the dashboard's CPU per 1,000-event message (measured on this
 * machine), so at 20,000 events/s validation alone would have needed a third of a core. The envelope is still
 * checked by zod; each event and lock by a plain function that accepts exactly what its schema accepts, or less:
 * anything it does not accept (an unknown field, a Redlock quorum, a ZooKeeper or database view, a bad value) goes
 * through the whole schema, so answers and error messages are the schema's.
 */
const updateEnvelope = z.object({
  agentId,
  at: isoTime,
  sources: z.array(sourceSchema).max(1000),
  upserts: z.array(z.unknown()).max(200_000),
  removed: z.array(z.string().max(128)).max(200_000),
  events: z.array(z.unknown()).max(10_000),
});
const snapshotEnvelope = z.object({
  agentId,
  agentName: z.string().max(256),
  version: z.string().max(64),
  at: isoTime,
  sources: z.array(sourceSchema).max(1000),
  locks: z.array(z.unknown()).max(200_000),
  part: z.object({ index: z.number().int().nonnegative(), last: z.boolean() }).optional(),
});

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isText = (v: unknown, max = MAX_TEXT): v is string => typeof v === "string" && v.length <= max;
const isTime = (v: unknown) => typeof v === "string" && v.length <= 40 && !Number.isNaN(Date.parse(v));
const isInt = (v: unknown) => Number.isSafeInteger(v);
const isNum = (v: unknown) => typeof v === "number" && Number.isFinite(v);
const BACKEND_SET = new Set<unknown>(BACKENDS);
const EVENT_TYPES = new Set<unknown>([
  "acquired",
  "released",
  "expired",
  "renewed",
  "owner-changed",
  "lost",
  "source-down",
  "source-up",
]);
const SEVERITIES = new Set<unknown>(["info", "warning", "critical"]);
const EVENT_KEYS = new Set([
  "id",
  "agentId",
  "type",
  "lockId",
  "backend",
  "source",
  "resource",
  "owner",
  "previousOwner",
  "library",
  "ttlMs",
  "at",
  "detail",
]);
/** The fields of a lock the fast path knows; quorum, zookeeper and database views go through the schema. */
const LOCK_KEYS = new Set([
  "id",
  "backend",
  "source",
  "resource",
  "owner",
  "ownerFingerprint",
  "library",
  "rule",
  "ttlMs",
  "holder",
  "holders",
  "holdersTotal",
  "waiters",
  "since",
  "observedAt",
  "kind",
  "valuePreview",
  "hazards",
  "agentId",
]);
const LOCK_ID = /^[A-Za-z0-9_-]{1,128}$/;

function onlyKeys(o: Obj, known: ReadonlySet<string>): boolean {
  for (const k in o) if (!known.has(k)) return false;
  // Own properties only (JSON never makes others); __proto__ from JSON is an own key and not in any set.
  return true;
}

function isRecordOf(v: unknown, ok: (x: unknown) => boolean): boolean {
  if (!isObj(v)) return false;
  for (const k in v) if (k.length > 64 || !ok(v[k])) return false;
  return true;
}

const isScalar = (v: unknown) => isText(v) || isNum(v) || typeof v === "boolean";

export function isPlainEvent(v: unknown): v is LockEvent {
  if (!isObj(v) || !onlyKeys(v, EVENT_KEYS)) return false;
  const id = v.id;
  return (
    typeof id === "string" &&
    id.length >= 8 &&
    id.length <= 64 &&
    isText(v.agentId, 128) &&
    EVENT_TYPES.has(v.type) &&
    isText(v.lockId, 128) &&
    BACKEND_SET.has(v.backend) &&
    isText(v.source) &&
    isText(v.resource) &&
    (v.owner === null || isText(v.owner)) &&
    (v.previousOwner === undefined || v.previousOwner === null || isText(v.previousOwner)) &&
    (v.library === undefined || isText(v.library, 64)) &&
    (v.ttlMs === undefined || v.ttlMs === null || isInt(v.ttlMs)) &&
    isTime(v.at) &&
    (v.detail === undefined || isRecordOf(v.detail, (x) => x === null || isScalar(x)))
  );
}

function arrayOf(v: unknown, max: number, ok: (x: unknown) => boolean): boolean {
  if (!Array.isArray(v) || v.length > max) return false;
  for (const x of v) if (!ok(x)) return false;
  return true;
}

const WAITER_KEYS = new Set(["owner", "since", "detail"]);
const HOLDER_KEYS = new Set(["owner", "since", "ttlMs"]);
const HAZARD_KEYS = new Set(["code", "severity", "message"]);

export function isPlainLock(v: unknown): v is Lock {
  if (!isObj(v) || !onlyKeys(v, LOCK_KEYS)) return false;
  return (
    typeof v.id === "string" &&
    LOCK_ID.test(v.id) &&
    BACKEND_SET.has(v.backend) &&
    isText(v.source) &&
    isText(v.resource) &&
    (v.owner === null || isText(v.owner)) &&
    (v.ownerFingerprint === undefined || isText(v.ownerFingerprint, 80)) &&
    isText(v.library, 64) &&
    isText(v.rule, 128) &&
    (v.ttlMs === null || isInt(v.ttlMs)) &&
    (v.holder === null || isRecordOf(v.holder, isScalar)) &&
    (v.holders === undefined ||
      arrayOf(
        v.holders,
        10_000,
        (h) =>
          isObj(h) &&
          onlyKeys(h, HOLDER_KEYS) &&
          isText(h.owner) &&
          (h.since === undefined || isTime(h.since)) &&
          (h.ttlMs === undefined || h.ttlMs === null || isInt(h.ttlMs)),
      )) &&
    (v.holdersTotal === undefined || (isInt(v.holdersTotal) && (v.holdersTotal as number) >= 0)) &&
    arrayOf(
      v.waiters,
      10_000,
      (w) =>
        isObj(w) &&
        onlyKeys(w, WAITER_KEYS) &&
        isText(w.owner) &&
        (w.since === undefined || isTime(w.since)) &&
        (w.detail === undefined || isText(w.detail)),
    ) &&
    isTime(v.since) &&
    isTime(v.observedAt) &&
    isText(v.kind, 32) &&
    (v.valuePreview === null || isText(v.valuePreview)) &&
    arrayOf(
      v.hazards,
      64,
      (h) => isObj(h) && onlyKeys(h, HAZARD_KEYS) && isText(h.code) && SEVERITIES.has(h.severity) && isText(h.message),
    ) &&
    isText(v.agentId, 128)
  );
}

function allOf(list: unknown[], ok: (x: unknown) => boolean): boolean {
  for (const x of list) if (!ok(x)) return false;
  return true;
}

export function parseAgentSnapshot(input: unknown): Parsed<AgentSnapshot> {
  const env = snapshotEnvelope.safeParse(input);
  if (env.success && allOf(env.data.locks, isPlainLock)) return { ok: true, value: env.data as AgentSnapshot };
  return parseAgentSnapshotBySchema(input);
}
export function parseAgentUpdate(input: unknown): Parsed<AgentUpdate> {
  const env = updateEnvelope.safeParse(input);
  if (env.success && allOf(env.data.events, isPlainEvent) && allOf(env.data.upserts, isPlainLock)) {
    return { ok: true, value: env.data as AgentUpdate };
  }
  return parseAgentUpdateBySchema(input);
}

const viewParam = z.string().max(4096).optional();
const viewSubscribeSchema: z.ZodType<ViewSubscribe> = z.object({
  viewId: z.string().min(1).max(64),
  query: z.object({
    q: viewParam,
    backend: viewParam,
    library: viewParam,
    source: viewParam,
    hazard: viewParam,
    pattern: viewParam,
    id: viewParam,
    sort: viewParam,
    offset: z.number().int().nonnegative().optional(),
    limit: z.number().int().nonnegative().optional(),
  }),
});

/** A browser's view subscription; the query's values are then checked by the same parser as GET /api/locks. */
export const parseViewSubscribe = (input: unknown) => parseWith(viewSubscribeSchema, input);
