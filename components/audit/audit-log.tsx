"use client";

import { useEffect, useState } from "react";
import { Time } from "../time/time";
import type { AuditEntryView } from "@/lib/contract/release";
import { shorten } from "../locks/format";
import { DataTable } from "../ui/data-table";
import { OUTCOME_CLASS } from "../release/release-panel";

const OUTCOMES = [
  "",
  "released",
  "dry-run",
  "nothing-to-do",
  "refused-owner-changed",
  "refused",
  "rejected",
  "error",
  "acknowledged",
];

async function fetchAudit(query: string): Promise<AuditEntryView[]> {
  const res = await fetch(`/api/audit?${query}`, { cache: "no-store" });
  if (res.status === 403) throw new Error("the audit log is for operators and admins");
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return ((await res.json()) as { entries: AuditEntryView[] }).entries;
}

/**
 * Every force-release attempt and alert acknowledgement, newest first, with filters and a CSV export of the same
 * selection.
 */
export function AuditLog() {
  const [actor, setActor] = useState("");
  const [outcome, setOutcome] = useState("");
  const [resource, setResource] = useState("");
  const [entries, setEntries] = useState<AuditEntryView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const query = new URLSearchParams({
    ...(actor ? { actor } : {}),
    ...(outcome ? { outcome } : {}),
    ...(resource ? { resource } : {}),
  }).toString();

  useEffect(() => {
    let current = true;
    fetchAudit(query)
      .then((e) => {
        if (!current) return;
        setEntries(e);
        setError(null);
      })
      .catch((err: unknown) => current && setError(err instanceof Error ? err.message : String(err)));
    return () => {
      current = false;
    };
  }, [query]);

  const input = "rounded border border-slate-700 bg-slate-900 px-2 py-1 text-sm";
  return (
    <section>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-lg font-semibold text-slate-100">Audit log</h1>
        <input
          className={input}
          placeholder="actor"
          aria-label="Actor"
          value={actor}
          onChange={(e) => setActor(e.target.value)}
        />
        <input
          className={input}
          placeholder="resource contains"
          aria-label="Resource"
          value={resource}
          onChange={(e) => setResource(e.target.value)}
        />
        <select className={input} aria-label="Outcome" value={outcome} onChange={(e) => setOutcome(e.target.value)}>
          {OUTCOMES.map((o) => (
            <option key={o} value={o}>
              {o || "any outcome"}
            </option>
          ))}
        </select>
        <a
          href={`/api/audit?${query}${query ? "&" : ""}format=csv`}
          className="text-sm text-sky-300 hover:underline"
          download
        >
          Export CSV
        </a>
      </div>
      {error ? <p className="text-sm text-amber-300">{error}</p> : null}
      <DataTable
        columns={["Time", "Actor", "Outcome", "Resource", "Observed owner", "Reason", "Per node"]}
        testId="audit-table"
        empty={entries && entries.length === 0 ? "No entries." : null}
      >
        {(entries ?? []).map((e) => (
          <tr key={e.id} data-testid="audit-row" data-outcome={e.outcome}>
            <td className="whitespace-nowrap px-3 py-1.5 font-mono text-xs text-slate-400">
              <Time at={e.at} />
            </td>
            <td className="px-3 py-1.5">
              {e.actor}{" "}
              <span className="text-xs text-slate-400">
                ({e.role}, {e.via})
              </span>
            </td>
            <td className={`px-3 py-1.5 ${OUTCOME_CLASS[e.outcome] ?? "text-amber-300"}`} title={e.message ?? ""}>
              {e.dryRun && e.outcome !== "dry-run" ? `${e.outcome} (dry run)` : e.outcome}
              {e.action !== "force-release" ? <span className="block text-xs text-slate-400">{e.action}</span> : null}
            </td>
            <td
              className="max-w-xs truncate px-3 py-1.5 font-mono text-xs"
              title={e.resource ?? (e.lockId || e.source) ?? ""}
            >
              {e.resource ?? (e.lockId || e.source)}
            </td>
            <td className="px-3 py-1.5 font-mono text-xs">{shorten(e.observedOwner, 24)}</td>
            <td className="max-w-sm px-3 py-1.5 text-slate-300">{e.reason}</td>
            <td className="px-3 py-1.5 text-xs text-slate-400">
              {e.perNode.map((n) => `${n.node}: ${n.outcome}`).join(", ")}
            </td>
          </tr>
        ))}
      </DataTable>
    </section>
  );
}
