import type { EventsResponse, HealthResponse, LockDetailResponse, LocksResponse } from "../../contract/api";
import { BACKENDS, isBackend } from "../../contract/lock";
import { fail, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

const MAX_LIMIT = 1000;
export const LOCK_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function health(_req: ApiRequest, deps: ApiDeps): ApiAnswer {
  const body: HealthResponse = {
    status: "ok",
    sources: deps.live
      .sources()
      .map((s) => ({ id: s.id, kind: s.kind, up: s.up, ...(s.error ? { error: s.error } : {}) })),
    agents: deps.live.agentList(),
  };
  return { status: 200, body };
}

export function listLocks(_req: ApiRequest, deps: ApiDeps): ApiAnswer {
  const body: LocksResponse = { generatedAt: new Date().toISOString(), locks: deps.live.locks() };
  return { status: 200, body };
}

export async function getLock(_req: ApiRequest, deps: ApiDeps, lockId: string): Promise<ApiAnswer> {
  if (!LOCK_ID.test(lockId)) return fail(400, "lock id must be URL-safe (A-Z a-z 0-9 _ -)");
  const lock = deps.live.lock(lockId);
  const events = await deps.store.listEvents({ lockId, limit: 200 });
  if (!lock && events.length === 0) return fail(404, `no lock ${lockId} is held or in history`);
  const body: LockDetailResponse = { generatedAt: new Date().toISOString(), lock, events };
  return { status: 200, body };
}

export function parseLimit(raw: string | null, fallback: number): number | string {
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) return "limit must be a positive whole number";
  return Math.min(Number(raw), MAX_LIMIT);
}

export function parseSince(raw: string | null): Date | undefined | string {
  if (!raw) return undefined;
  const since = new Date(/^\d+$/.test(raw) ? Number(raw) : raw);
  return Number.isNaN(since.getTime()) ? "since must be an ISO time or epoch milliseconds" : since;
}

export async function listEvents(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const p = req.url.searchParams;
  const limit = parseLimit(p.get("limit"), 100);
  if (typeof limit === "string") return fail(400, limit);
  const since = parseSince(p.get("since"));
  if (typeof since === "string") return fail(400, since);
  const backend = p.get("backend") ?? undefined;
  if (backend && !isBackend(backend)) {
    return fail(400, `backend must be one of ${BACKENDS.join(", ")}`);
  }
  const body: EventsResponse = {
    events: await deps.store.listEvents({
      resource: p.get("resource") ?? undefined,
      lockId: p.get("lockId") ?? undefined,
      backend,
      since,
      limit,
    }),
  };
  return { status: 200, body };
}
