import type { EventsResponse, HealthResponse, LockDetailResponse, LocksResponse } from "../contract/api";
import type { LiveState } from "./live-state";
import type { HistoryStore } from "./store";

export interface ApiAnswer {
  status: number;
  body: unknown;
  contentType?: string;
}

const MAX_LIMIT = 1000;

function badRequest(message: string): ApiAnswer {
  return { status: 400, body: { error: message } };
}

/**
 * The read API (../shared/reference/api-contract.md). Routing and parameter checks here; the data comes from the
 * live state (current locks) and the history store (events).
 */
export async function handleApi(
  method: string,
  url: URL,
  deps: { live: LiveState; store: HistoryStore },
): Promise<ApiAnswer> {
  const parts = url.pathname.replace(/\/+$/, "").split("/").slice(2); // after "/api"
  const [resource, id, ...rest] = parts;
  if (method !== "GET" && method !== "HEAD") return { status: 405, body: { error: `${method} is not allowed here` } };

  if (resource === "health" && parts.length === 1) {
    const body: HealthResponse = {
      status: "ok",
      sources: deps.live
        .sources()
        .map((s) => ({ id: s.id, kind: s.kind, up: s.up, ...(s.error ? { error: s.error } : {}) })),
      agents: deps.live.agentList(),
    };
    return { status: 200, body };
  }
  if (resource === "locks" && parts.length === 1) {
    const body: LocksResponse = { generatedAt: new Date().toISOString(), locks: deps.live.locks() };
    return { status: 200, body };
  }
  if (resource === "locks" && id !== undefined && rest.length === 0) {
    const lockId = decodeURIComponent(id);
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(lockId)) return badRequest("lock id must be URL-safe (A-Z a-z 0-9 _ -)");
    const lock = deps.live.lock(lockId);
    const events = await deps.store.listEvents({ lockId, limit: 200 });
    if (!lock && events.length === 0)
      return { status: 404, body: { error: `no lock ${lockId} is held or in history` } };
    const body: LockDetailResponse = { generatedAt: new Date().toISOString(), lock, events };
    return { status: 200, body };
  }
  if (resource === "events" && parts.length === 1) {
    const p = url.searchParams;
    const limitRaw = p.get("limit") ?? "100";
    if (!/^\d+$/.test(limitRaw) || Number(limitRaw) < 1) return badRequest("limit must be a positive whole number");
    const sinceRaw = p.get("since");
    let since: Date | undefined;
    if (sinceRaw) {
      since = new Date(/^\d+$/.test(sinceRaw) ? Number(sinceRaw) : sinceRaw);
      if (Number.isNaN(since.getTime())) return badRequest("since must be an ISO time or epoch milliseconds");
    }
    const backend = p.get("backend") ?? undefined;
    if (backend && !["redis", "redlock", "zookeeper"].includes(backend)) {
      return badRequest("backend must be redis, redlock or zookeeper");
    }
    const body: EventsResponse = {
      events: await deps.store.listEvents({
        resource: p.get("resource") ?? undefined,
        lockId: p.get("lockId") ?? undefined,
        backend,
        since,
        limit: Math.min(Number(limitRaw), MAX_LIMIT),
      }),
    };
    return { status: 200, body };
  }
  return { status: 404, body: { error: `no such API: ${url.pathname}` } };
}
