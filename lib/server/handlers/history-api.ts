import { RANK_BY, type RankBy } from "../../contract/alerts";
import { fleetHours, hurtByLock, resourceHistory, topContended } from "../history";
import { LOCK_ID } from "./read-api";
import { fail, requireRole, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

const WINDOWS: Record<string, number> = {
  "15m": 900_000,
  "1h": 3_600_000,
  "6h": 21_600_000,
  "24h": 86_400_000,
  "7d": 604_800_000,
};
const MAX_EVENTS = 50_000;

function windowOf(req: ApiRequest): number | null {
  return WINDOWS[req.url.searchParams.get("window") ?? "1h"] ?? null;
}

/** GET /api/history/locks/:id?window=1h: acquisitions, hold and wait distributions, holder timeline. */
export async function lockHistory(req: ApiRequest, deps: ApiDeps, lockId: string): Promise<ApiAnswer> {
  const denied = requireRole(req, "viewer");
  if (denied) return denied;
  if (!LOCK_ID.test(lockId)) return fail(400, "lock id must be URL-safe (A-Z a-z 0-9 _ -)");
  const windowMs = windowOf(req);
  if (windowMs === null) return fail(400, `window must be one of ${Object.keys(WINDOWS).join(", ")}`);
  const now = Date.now();
  const events = await deps.store.eventsInWindow({ lockId, since: new Date(now - windowMs), limit: MAX_EVENTS });
  const resource = deps.live.lock(lockId)?.resource ?? events[events.length - 1]?.resource ?? lockId;
  return { status: 200, body: resourceHistory(resource, events, windowMs, now) };
}

/**
 * GET /api/history/top?window=24h&by=contention|wait|waiters|takeovers|no-ttl: the resources that hurt most across
 * all backends, ranked as asked, and the fleet's contention per hour.
 */
export async function topHistory(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const denied = requireRole(req, "viewer");
  if (denied) return denied;
  const windowMs = windowOf(req);
  if (windowMs === null) return fail(400, `window must be one of ${Object.keys(WINDOWS).join(", ")}`);
  const by = req.url.searchParams.get("by") ?? "contention";
  if (!(RANK_BY as readonly string[]).includes(by))
    return { status: 400, body: { error: `by must be one of ${RANK_BY.join(", ")}`, param: "by" } };
  const now = Date.now();
  // Rollups are hourly: the window starts at the top of its first hour.
  const since = new Date(Math.floor((now - windowMs) / 3_600_000) * 3_600_000);
  const rows = await deps.store.hourlyRollups(since);
  // Waiting and TTL-less holding are not in the rollups: read from the window's raw events (bounded).
  const events = await deps.store.eventsInWindow({
    since: new Date(now - windowMs),
    types: ["acquired", "owner-changed", "released", "expired", "lost"],
    limit: MAX_EVENTS,
  });
  const hurts = hurtByLock(events, now - windowMs, now, deps.live.rawLocks());
  const body = {
    ...topContended(rows, windowMs, 20, hurts, by as RankBy),
    hours: fleetHours(rows, since.getTime(), now),
  };
  return { status: 200, body };
}

/** GET /api/metrics: Prometheus text format (scrape with a viewer token). */
export async function metrics(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const denied = requireRole(req, "viewer");
  if (denied) return denied;
  return { status: 200, body: await deps.metrics.registry.metrics(), contentType: deps.metrics.registry.contentType };
}
