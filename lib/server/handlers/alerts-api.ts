import type { AlertsResponse, AlertView } from "../../contract/alerts";
import type { AuditOutcome } from "../../contract/release";
import { alertAckSchema, checkBody } from "../../contract/requests";
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
    open: await deps.store.countOpenAlerts(),
  };
  return { status: 200, body };
}

/**
 * POST /api/alerts/:id/ack: an operator takes the alert (who and when are kept and sent to the webhooks). Every
 * attempt by a known actor goes to the audit log, refused ones included (as for force-release: a request without
 * credentials has no actor and is not recorded). The optional body `{ "note" }` is kept as the audit row's reason.
 */
export async function acknowledgeAlert(req: ApiRequest, deps: ApiDeps, id: string): Promise<ApiAnswer> {
  if (!req.principal) return requireRole(req, "operator")!;
  const principal = req.principal;
  let note = "";
  const audit = async (outcome: AuditOutcome, message: string, alert?: AlertView): Promise<void> => {
    await deps.store.addAudit({
      actor: principal.name,
      role: principal.role,
      via: principal.via,
      action: "acknowledge-alert",
      lockId: alert?.lockId ?? "",
      backend: alert?.backend ?? null,
      source: alert?.source ?? null,
      resource: alert?.resource ?? null,
      observedOwner: null,
      reason: note,
      dryRun: false,
      outcome,
      message: message.slice(0, 4096),
      perNode: [],
      clientAddress: req.clientAddress,
    });
  };
  const refuse = async (answer: ApiAnswer): Promise<ApiAnswer> => {
    await audit("rejected", (answer.body as { error: string }).error);
    return answer;
  };

  const denied = requireRole(req, "operator");
  if (denied) return refuse(denied);
  const csrf = deps.auth.checkCsrf(principal, req.headers);
  if (csrf) return refuse(fail(403, `CSRF check failed: ${csrf}`));
  if (!/^[A-Za-z0-9-]{1,64}$/.test(id)) return refuse(fail(400, `not an alert id: ${id.slice(0, 100)}`));
  let raw: unknown;
  try {
    raw = await req.json();
  } catch (err) {
    // Audited, then answered by the HTTP layer as for any route (400 for bad JSON, 413 for a body over the limit).
    await audit("rejected", err instanceof Error ? err.message : String(err));
    throw err;
  }
  // No body (or an empty one) is fine; anything else must be the documented object.
  const checked = checkBody(alertAckSchema, raw ?? {});
  if (!checked.ok) return refuse(fail(400, checked.error));
  note = checked.value.note ?? "";
  const alert = await deps.alerts.acknowledge(id, principal.name);
  if (!alert) {
    const message = `no open alert ${id} (resolved or already acknowledged)`;
    await audit("nothing-to-do", message);
    return fail(409, "no open alert with that id (resolved or already acknowledged)");
  }
  await audit("acknowledged", `acknowledged alert ${alert.id} (${alert.rule}): ${alert.message}`, alert);
  deps.onAlertsChanged();
  return { status: 200, body: alert };
}
