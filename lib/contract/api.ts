/** HTTP answers of the dashboard (../shared/reference/api-contract.md). */
import type { Lock, LockEvent, SourceStatus } from "./lock";

export interface HealthResponse {
  status: "ok";
  sources: Array<Pick<SourceStatus, "id" | "kind" | "up" | "error" | "changeDetection" | "note">>;
  agents: Array<{ id: string; name: string; connected: boolean; lastSeen: string }>;
}

export interface LocksResponse {
  generatedAt: string;
  locks: Lock[];
}

export interface LockDetailResponse {
  generatedAt: string;
  /** Null when the lock is not held now but has history. */
  lock: Lock | null;
  events: LockEvent[];
}

export interface EventsResponse {
  events: LockEvent[];
}

export interface ApiError {
  error: string;
}
