import { getSession, signIn, signOut } from "./auth-api";
import { acknowledgeAlert, listAlerts } from "./alerts-api";
import { listAudit } from "./audit-api";
import { lockHistory, metrics, topHistory } from "./history-api";
import { fleet, getLock, health, listEvents, listLocks } from "./read-api";
import { releaseLock } from "./release-api";
import { fail, requireRole, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

/** Routes /api/*. Reading needs a viewer; health is open so load balancers and probes can call it. */
export async function routeApi(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const parts = req.url.pathname.replace(/\/+$/, "").split("/").slice(2);
  const path = parts.join("/");
  const m = req.method;

  if (path === "health" && m === "GET") return health(req, deps);
  if (path === "auth/login" && m === "POST") return signIn(req, deps);
  if (path === "auth/logout" && m === "POST") return signOut(req, deps);
  if (path === "session" && m === "GET") return getSession(req);

  if (parts[0] === "locks" && parts.length === 3 && parts[2] === "release") {
    if (m !== "POST") return fail(405, "use POST");
    return releaseLock(req, deps, decodeURIComponent(parts[1]!));
  }
  if (parts[0] === "alerts" && parts.length === 3 && parts[2] === "ack") {
    if (m !== "POST") return fail(405, "use POST");
    return acknowledgeAlert(req, deps, decodeURIComponent(parts[1]!));
  }
  if (m !== "GET") return fail(405, `${m} is not allowed here`);
  if (path === "audit") return listAudit(req, deps);
  if (path === "alerts") return listAlerts(req, deps);
  if (path === "metrics") return metrics(req, deps);
  if (path === "history/top") return topHistory(req, deps);
  if (parts[0] === "history" && parts[1] === "locks" && parts.length === 3) {
    return lockHistory(req, deps, decodeURIComponent(parts[2]!));
  }

  const denied = requireRole(req, "viewer");
  if (denied) return denied;
  if (path === "locks") return listLocks(req, deps);
  if (parts[0] === "locks" && parts.length === 2) return getLock(req, deps, decodeURIComponent(parts[1]!));
  if (path === "events") return listEvents(req, deps);
  if (path === "fleet") return fleet(req, deps);
  return fail(404, `no such API: ${req.url.pathname}`);
}
