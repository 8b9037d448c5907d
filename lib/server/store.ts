/**
 * The history store: the only module that imports the Prisma client. Everything else talks to HistoryStore.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaClient } from "../generated/prisma/client.ts";
import type { Backend, LockEvent, LockEventType } from "../contract/lock";
import type { AuditEntryView, ReleaseNodeResult, ReleaseOutcome } from "../contract/release";
import { databaseFileUrl } from "./database-url";

export interface EventQuery {
  lockId?: string;
  resource?: string;
  backend?: string;
  since?: Date;
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

export interface HistoryStore {
  addAudit(entry: NewAuditEntry): Promise<AuditEntryView>;
  listAudit(query: AuditQuery): Promise<AuditEntryView[]>;
  /** Stores events once each (idempotent on the agent-assigned id); returns the ids now stored. */
  saveEvents(events: readonly LockEvent[]): Promise<string[]>;
  listEvents(query: EventQuery): Promise<LockEvent[]>;
  countEvents(): Promise<number>;
  touchAgent(agent: { id: string; name: string; version: string }): Promise<void>;
  close(): Promise<void>;
}

/** SQLite allows a limited number of bound variables per statement. */
const CHUNK = 400;

export function openStore(databaseUrl: string | undefined): HistoryStore {
  const url = databaseFileUrl(databaseUrl);
  const file = url.slice("file:".length);
  if (file && file !== ":memory:") mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const prisma = new PrismaClient({ adapter: new PrismaBetterSQLite3({ url }) });
  return {
    async saveEvents(events) {
      const stored: string[] = [];
      for (let i = 0; i < events.length; i += CHUNK) {
        const chunk = events.slice(i, i + CHUNK);
        await prisma.$transaction(async (tx) => {
          const existing = await tx.event.findMany({
            where: { id: { in: chunk.map((e) => e.id) } },
            select: { id: true },
          });
          const have = new Set(existing.map((e) => e.id));
          const fresh = dedupe(chunk.filter((e) => !have.has(e.id)));
          if (fresh.length > 0) await tx.event.createMany({ data: fresh.map(toRow) });
        });
        stored.push(...chunk.map((e) => e.id));
      }
      return stored;
    },
    async listEvents(q) {
      const rows = await prisma.event.findMany({
        where: {
          ...(q.lockId ? { lockId: q.lockId } : {}),
          ...(q.resource ? { resource: q.resource } : {}),
          ...(q.backend ? { backend: q.backend } : {}),
          ...(q.since ? { at: { gte: q.since } } : {}),
        },
        orderBy: [{ at: "desc" }, { receivedAt: "desc" }],
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
    close: () => prisma.$disconnect(),
  };
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

function fromRow(r: {
  id: string;
  agentId: string;
  type: string;
  lockId: string;
  backend: string;
  source: string;
  resource: string;
  owner: string | null;
  previousOwner: string | null;
  library: string | null;
  ttlMs: number | null;
  at: Date;
  detail: string | null;
}): LockEvent {
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

function auditFromRow(r: {
  id: string;
  at: Date;
  actor: string;
  role: string;
  via: string;
  action: string;
  lockId: string;
  backend: string | null;
  source: string | null;
  resource: string | null;
  observedOwner: string | null;
  reason: string;
  dryRun: boolean;
  outcome: string;
  message: string | null;
  perNode: string | null;
  clientAddress: string | null;
}): AuditEntryView {
  let perNode: ReleaseNodeResult[] = [];
  try {
    perNode = r.perNode ? (JSON.parse(r.perNode) as ReleaseNodeResult[]) : [];
  } catch {
    perNode = [];
  }
  return { ...r, at: r.at.toISOString(), outcome: r.outcome as ReleaseOutcome, perNode };
}
