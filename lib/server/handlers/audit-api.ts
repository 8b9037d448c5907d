import type { AuditEntryView } from "../../contract/release";
import { parseLimit, parseSince } from "./read-api";
import { fail, requireRole, type ApiAnswer, type ApiDeps, type ApiRequest } from "./types";

const COLUMNS: Array<keyof AuditEntryView> = [
  "at",
  "actor",
  "role",
  "via",
  "action",
  "outcome",
  "dryRun",
  "backend",
  "source",
  "resource",
  "lockId",
  "observedOwner",
  "reason",
  "message",
  "perNode",
  "clientAddress",
];

/** RFC 4180 quoting; a leading =, +, - or @ is prefixed so a spreadsheet never runs a key name as a formula. */
export function csvCell(v: unknown): string {
  let s = v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv(entries: AuditEntryView[]): string {
  const lines = [COLUMNS.join(",")];
  for (const e of entries) lines.push(COLUMNS.map((c) => csvCell(e[c])).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** GET /api/audit?actor=&outcome=&resource=&since=&limit=&format=csv (operators and admins). */
export async function listAudit(req: ApiRequest, deps: ApiDeps): Promise<ApiAnswer> {
  const denied = requireRole(req, "operator");
  if (denied) return denied;
  const p = req.url.searchParams;
  const limit = parseLimit(p.get("limit"), p.get("format") === "csv" ? 1000 : 200);
  if (typeof limit === "string") return fail(400, limit);
  const since = parseSince(p.get("since"));
  if (typeof since === "string") return fail(400, since);
  const entries = await deps.store.listAudit({
    actor: p.get("actor") || undefined,
    outcome: p.get("outcome") || undefined,
    resource: p.get("resource") || undefined,
    since,
    limit,
  });
  if (p.get("format") === "csv") {
    return {
      status: 200,
      body: toCsv(entries),
      contentType: "text/csv; charset=utf-8",
      headers: { "content-disposition": 'attachment; filename="lockscope-audit.csv"' },
    };
  }
  return { status: 200, body: { entries } };
}
