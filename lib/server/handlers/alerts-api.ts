import type { AlertsResponse } from "../../contract/alerts";
import { parseLimit } from "./read-api";
import { fail, requireRole, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

/** GET /api/alerts?state=&limit=: open first. */
export async function listAlerts(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const denied = requireRole(req, "viewer");
  if (denied) return denied;
  const state = req.url.searchParams.get("state") ?? undefined;
  if (state && !["open", "acknowledged", "resolved"].includes(state)) {
    return fail(400, "state must be open, acknowledged or resolved");
  }
  const limit = parseLimit(req.url.searchParams.get("limit"), 200);
  if (typeof limit === "string") return fail(400, limit);
  const alerts = await deps.store.listAlerts({ state, limit });
  const body: AlertsResponse = {
    alerts,
    open: (await deps.store.openAlerts()).filter((a) => a.state === "open").length,
  };
  return { status: 200, body };
}

/** POST /api/alerts/:id/ack: an operator takes the alert (who and when are kept and sent to the webhooks). */
export async function acknowledgeAlert(req: ApiRequest, deps: ApiDeps, id: string): Promise<ApiAnswer> {
  const denied = requireRole(req, "operator");
  if (denied) return denied;
  const csrf = deps.auth.checkCsrf(req.principal!, req.headers);
  if (csrf) return fail(403, `CSRF check failed: ${csrf}`);
  if (!/^[A-Za-z0-9-]{1,64}$/.test(id)) return fail(400, "not an alert id");
  const alert = await deps.alerts.acknowledge(id, req.principal!.name);
  if (!alert) return fail(409, "no open alert with that id (resolved or already acknowledged)");
  deps.onAlertsChanged();
  return { status: 200, body: alert };
}
