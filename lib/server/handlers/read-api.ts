import type {
  EventsResponse,
  FleetResponse,
  HealthResponse,
  LockDetailResponse,
  LocksResponse,
} from "../../contract/api";
import { BACKENDS, isBackend } from "../../contract/lock";
import { decodeEventCursor, encodeEventCursor, parseEventTypes } from "../event-cursor";
import { currentLock } from "../lock-index";
import { parseLockQuery } from "../lock-query";
import { fail, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

const MAX_LIMIT = 1000;
export const LOCK_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Liveness for anyone (load balancers, probes): `{"status":"ok","sources":[],"agents":[]}`. Source ids, their
 * errors (which name servers) and agent names only for a viewer.
 */
export function health(req: ApiRequest, deps: ApiDeps): ApiAnswer {
  if (!req.principal) {
    const open: HealthResponse = { status: "ok", sources: [], agents: [] };
    return { status: 200, body: open };
  }
  const body: HealthResponse = {
    status: "ok",
    sources: deps.live.sources().map((s) => ({
      id: s.id,
      kind: s.kind,
      up: s.up,
      ...(s.error ? { error: s.error } : {}),
      ...(s.changeDetection ? { changeDetection: s.changeDetection } : {}),
      ...(s.note ? { note: s.note } : {}),
    })),
    agents: deps.live.agentList(),
  };
  return { status: 200, body };
}

/** GET /api/locks: one page of the live locks that match the query, with the total and counts of all matches. */
export function listLocks(req: ApiRequest, deps: ApiDeps): ApiAnswer {
  const parsed = parseLockQuery(req.url.searchParams);
  if (!parsed.ok) return { status: 400, body: { error: parsed.error, param: parsed.param } };
  const at = Date.now();
  const result = deps.live.query(parsed.query);
  const body: LocksResponse = {
    generatedAt: new Date(at).toISOString(),
    total: result.total,
    counts: result.counts,
    locks: result.page.map((e) => currentLock(e, at)),
    nextCursor: result.nextCursor,
  };
  return { status: 200, body };
}

const GROUP_BY = ["pattern", "source", "library"] as const;
const FLEET_PARAMS = new Set(["by", "limit", "q", "backend", "library", "source", "hazard", "pattern"]);

/** GET /api/fleet?by=pattern|source|library: every live lock in groups, the groups with hazards first. */
export function fleet(req: ApiRequest, deps: ApiDeps): ApiAnswer {
  const p = req.url.searchParams;
  for (const name of p.keys()) {
    if (!FLEET_PARAMS.has(name))
      return fleetFail(name, `unknown parameter ${name}; known: ${[...FLEET_PARAMS].join(", ")}`);
  }
  const by = p.get("by") ?? "pattern";
  if (!(GROUP_BY as readonly string[]).includes(by)) return fleetFail("by", `by must be one of ${GROUP_BY.join(", ")}`);
  const limit = parseLimit(p.get("limit"), 200);
  if (typeof limit === "string") return fleetFail("limit", limit);
  // The filter is the locks query's own (same names, same checks); sort and paging do not apply to groups.
  const filterParams = [...p.entries()].filter(([k]) => k !== "by" && k !== "limit");
  const parsed = parseLockQuery(filterParams);
  if (!parsed.ok) return fleetFail(parsed.param, parsed.error);
  const groups = deps.live.groups(by as FleetResponse["by"], parsed.query.filter);
  const body: FleetResponse = {
    generatedAt: new Date().toISOString(),
    by: by as FleetResponse["by"],
    total: groups.reduce((n, g) => n + g.count, 0),
    moreGroups: Math.max(0, groups.length - limit),
    groups: groups.slice(0, limit),
  };
  return { status: 200, body };
}

function fleetFail(param: string, error: string): ApiAnswer {
  return { status: 400, body: { error, param } };
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

/**
 * GET /api/events: stored history, newest first, one page. `type` narrows to event types (comma-separated);
 * `before` is the previous page's nextCursor.
 */
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
  const types = parseEventTypes(p.get("type"));
  if (typeof types === "string") return { status: 400, body: { error: types, param: "type" } };
  const rawBefore = p.get("before");
  const before = rawBefore ? decodeEventCursor(rawBefore) : undefined;
  if (typeof before === "string") return { status: 400, body: { error: before, param: "before" } };
  // One more than asked: whether a next page exists, without a count over the whole table.
  const rows = await deps.store.listEvents({
    resource: p.get("resource") ?? undefined,
    lockId: p.get("lockId") ?? undefined,
    backend,
    since,
    types,
    before,
    limit: limit + 1,
  });
  const events = rows.slice(0, limit);
  const body: EventsResponse = {
    events,
    nextCursor: rows.length > limit ? encodeEventCursor(events[events.length - 1]!) : null,
  };
  return { status: 200, body };
}
