/**
 * Terminal output of the `lockscope` command line: plain-text tables, pure functions of the API's answers and the
 * current time, so the layout is unit-tested without a dashboard.
 */
import type { AlertView } from "../lib/contract/alerts";
import type { Lock, LockEvent } from "../lib/contract/lock";
import type { ReleaseResult } from "../lib/contract/release";

/**
 * Key names reach the terminal: the agent escapes them already, but a control byte (an ESC starting a terminal
 * sequence, a newline breaking the table) must never pass through whatever the server sends.
 */
export function safeText(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.codePointAt(0)!;
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
  });
}

/** Cuts to `width` characters with an ellipsis, after escaping. */
export function cell(value: string | number | null | undefined, width: number): string {
  const s = safeText(value === null || value === undefined ? "—" : String(value));
  return [...s].length <= width ? s : `${[...s].slice(0, Math.max(1, width - 1)).join("")}…`;
}

/** Columns sized to their content (each capped), separated by two spaces; a header row first. */
export function table(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  caps: readonly number[],
): string {
  const cut = rows.map((r) => r.map((v, i) => cell(v, caps[i] ?? 40)));
  const widths = headers.map((h, i) => Math.max(h.length, ...cut.map((r) => [...(r[i] ?? "")].length)));
  const line = (r: readonly string[]) =>
    r
      .map((v, i) => (i === r.length - 1 ? v : v + " ".repeat(Math.max(0, widths[i]! - [...v].length))))
      .join("  ")
      .trimEnd();
  return [line(headers), ...cut.map(line)].join("\n");
}

/** 1.2 s, 4 m 05 s, 3 h 10 m, 2 d 4 h. */
export function formatDuration(ms: number): string {
  if (ms < 0) ms = 0;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(s % 60).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${String(m % 60).padStart(2, "0")} m`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** The TTL a lock has left at `nowMs`, counted down from the answer's generatedAt. */
export function ttlText(ttlMs: number | null, generatedAtMs: number, nowMs: number): string {
  if (ttlMs === null) return "never";
  return formatDuration(Math.max(0, ttlMs - Math.max(0, nowMs - generatedAtMs)));
}

const SEVERITY_RANK: Record<string, number> = { critical: 0, warning: 1, info: 2 };

export function hazardsText(lock: Pick<Lock, "hazards">): string {
  return [...lock.hazards]
    .sort((a, b) => (SEVERITY_RANK[a.severity] ?? 3) - (SEVERITY_RANK[b.severity] ?? 3))
    .map((h) => h.code)
    .join(",");
}

/** The locks table: most hazardous first, then by resource. */
export function locksTable(locks: readonly Lock[], generatedAtMs: number, nowMs: number): string {
  if (locks.length === 0) return "no locks held";
  const sorted = [...locks].sort(
    (a, b) =>
      Math.min(...a.hazards.map((h) => SEVERITY_RANK[h.severity] ?? 3), 3) -
        Math.min(...b.hazards.map((h) => SEVERITY_RANK[h.severity] ?? 3), 3) || a.resource.localeCompare(b.resource),
  );
  const rows = sorted.map((l) => [
    l.resource,
    l.backend,
    l.owner ?? "unknown",
    ttlText(l.ttlMs, generatedAtMs, nowMs),
    formatDuration(nowMs - Date.parse(l.since)),
    String(l.waiters.length),
    l.library,
    hazardsText(l) || "-",
    l.id,
  ]);
  return table(
    ["RESOURCE", "BACKEND", "OWNER", "TTL", "HELD", "WAITERS", "LIBRARY", "HAZARDS", "ID"],
    rows,
    [48, 9, 36, 10, 10, 7, 16, 40, 128],
  );
}

function eventRow(e: LockEvent): string[] {
  return [e.at, e.type, e.resource, e.owner ?? "-", e.source];
}

export function eventsTable(events: readonly LockEvent[]): string {
  if (events.length === 0) return "no events";
  return table(["AT", "TYPE", "RESOURCE", "OWNER", "SOURCE"], events.map(eventRow), [24, 14, 48, 36, 40]);
}

/** `lockscope lock <id>`: the holder, waiters, hazards and recent events. */
export function lockDetail(
  body: { generatedAt: string; lock: Lock | null; events: readonly LockEvent[] },
  nowMs: number,
): string {
  const out: string[] = [];
  const l = body.lock;
  const generatedAtMs = Date.parse(body.generatedAt);
  if (l) {
    const field = (k: string, v: string) => `${k.padEnd(14)}${safeText(v)}`;
    out.push(field("resource", l.resource), field("status", "held"), field("id", l.id));
    out.push(field("backend", `${l.backend} · ${l.source}`), field("library", `${l.library} (rule ${l.rule})`));
    out.push(field("owner", l.owner ?? "unknown"), field("ttl", ttlText(l.ttlMs, generatedAtMs, nowMs)));
    out.push(field("held for", `${formatDuration(nowMs - Date.parse(l.since))} (since ${l.since})`));
    out.push(field("type", l.kind), field("value", l.valuePreview ?? "—"));
    for (const [k, v] of Object.entries(l.holder ?? {})) out.push(field(`holder ${k}`, String(v)));
    if (l.quorum) {
      const q = l.quorum;
      out.push(field("quorum", `${q.state}: ${q.votes} of ${q.nodes} votes (needs ${q.needed})`));
    }
    out.push("", `waiters (${l.waiters.length})`);
    if (l.waiters.length === 0) out.push("  none");
    l.waiters.forEach((w, i) =>
      out.push(
        `  ${i + 1}. ${safeText(w.owner)}${w.since ? ` since ${w.since}` : ""}${w.detail ? ` (${safeText(w.detail)})` : ""}`,
      ),
    );
    out.push("", `hazards (${l.hazards.length})`);
    if (l.hazards.length === 0) out.push("  none");
    for (const h of l.hazards) out.push(`  ${h.severity.padEnd(8)} ${h.code}: ${safeText(h.message)}`);
  } else {
    const last = body.events[0];
    out.push(`${"resource".padEnd(14)}${safeText(last?.resource ?? "unknown")}`);
    out.push(`${"status".padEnd(14)}not held${last ? ` (${last.type} at ${last.at})` : ""}`);
  }
  out.push(
    "",
    `recent events (${body.events.length})`,
    body.events.length ? eventsTable(body.events.slice(0, 20)) : "  none",
  );
  return out.join("\n");
}

export function alertsTable(alerts: readonly AlertView[]): string {
  if (alerts.length === 0) return "no alerts";
  return table(
    ["STATE", "SEVERITY", "RULE", "RESOURCE", "RAISED", "MESSAGE"],
    alerts.map((a) => [a.state, a.severity, a.rule, a.resource ?? a.source, a.raisedAt, a.message]),
    [12, 8, 22, 48, 24, 100],
  );
}

export function releaseText(r: ReleaseResult): string {
  const lines = [`${r.outcome}: ${safeText(r.message)}`];
  if (r.plan.length) lines.push("plan:", ...r.plan.map((s) => `  ${safeText(s)}`));
  if (r.perNode.length > 1) {
    lines.push(
      "per node:",
      ...r.perNode.map((n) => `  ${safeText(n.node)}: ${n.outcome}${n.detail ? ` (${safeText(n.detail)})` : ""}`),
    );
  }
  return lines.join("\n");
}

/** Client-side filter for `locks` and `watch` (the dashboard may filter too; applying it again changes nothing). */
export function matchesFilter(lock: Lock, f: { backend?: string; hazard?: string; query?: string }): boolean {
  if (f.backend && lock.backend !== f.backend) return false;
  if (f.hazard && !lock.hazards.some((h) => h.code === f.hazard)) return false;
  if (f.query) {
    const q = f.query.toLowerCase();
    const hay = [lock.resource, lock.owner ?? "", lock.source, lock.library].join("\n").toLowerCase();
    if (!hay.includes(q)) return false;
  }
  return true;
}
