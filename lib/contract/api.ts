/** HTTP answers of the dashboard (../shared/reference/api-contract.md). */
import type { Lock, LockEvent, SourceStatus } from "./lock";

export interface HealthResponse {
  status: "ok";
  sources: Array<Pick<SourceStatus, "id" | "kind" | "up" | "error" | "changeDetection" | "note">>;
  agents: Array<{ id: string; name: string; connected: boolean; lastSeen: string }>;
}

/** Counts over every lock that matches a query (all pages), by backend and by hazard code. */
export interface LockCounts {
  byBackend: Record<string, number>;
  byHazard: Record<string, number>;
}

/** GET /api/locks: one page of the locks that match (see the README's HTTP API section for the parameters). */
export interface LocksResponse {
  generatedAt: string;
  /** Locks that match the filter, all pages together. */
  total: number;
  counts: LockCounts;
  locks: Lock[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** GET /api/fleet?by=pattern|source|library: the locks in groups, groups with hazards first. */
export interface FleetResponse {
  generatedAt: string;
  by: "pattern" | "source" | "library";
  total: number;
  /** Groups in the answer are at most `limit`; `groups` beyond it are counted here. */
  moreGroups: number;
  groups: Array<{
    key: string;
    count: number;
    withHazards: number;
    byHazard: Record<string, number>;
    byBackend: Record<string, number>;
    longestHoldMs: number;
  }>;
}

export interface LockDetailResponse {
  generatedAt: string;
  /** Null when the lock is not held now but has history. */
  lock: Lock | null;
  events: LockEvent[];
}

export interface EventsResponse {
  events: LockEvent[];
  /** Pass as `before` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

export interface ApiError {
  error: string;
  /** The query parameter that is wrong, on a 400 about one. */
  param?: string;
}
