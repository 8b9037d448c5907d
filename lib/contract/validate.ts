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

export const parseAgentSnapshot = (input: unknown) => parseWith(snapshotSchema, input);
export const parseAgentUpdate = (input: unknown) => parseWith(updateSchema, input);

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
