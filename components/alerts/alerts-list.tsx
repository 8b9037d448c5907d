"use client";

import Link from "next/link";
import { useEffect, useMemo, useState } from "react";
import type { AlertView, AlertsResponse } from "@/lib/contract/alerts";
import { canRelease, postJson, useSession } from "../auth/session-provider";
import { SEVERITY_CLASS } from "../locks/format";
import { formatTime, relativeTime } from "../time/format-time";
import { Time, useZone } from "../time/time";
import { DataTable, nextSort, type TableSort } from "../ui/data-table";
import { useLiveLocks, useNow } from "../live/live-locks-provider";
import { evidenceLines, filterAlerts, NO_FILTER, ruleOptions, sortAlerts, type AlertFilter } from "./alert-view-model";

async function fetchAlerts(): Promise<AlertView[]> {
  const res = await fetch("/api/alerts?limit=500", { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return ((await res.json()) as AlertsResponse).alerts;
}

const STATE_CLASS = { open: "text-rose-300", acknowledged: "text-amber-300", resolved: "text-slate-400" } as const;
const SELECT = "rounded border border-slate-700 bg-slate-950 px-1 py-0.5 text-sm text-slate-200";

/** A labelled filter whose first option, "any" (the empty value), lets everything through. */
function FilterSelect(props: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  options: Array<{ value: string; label: string }>;
}) {
  return (
    <label>
      {props.label}{" "}
      <select
        aria-label={props.label}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        className={SELECT}
      >
        <option value="">any</option>
        {props.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Open alerts first; an operator acknowledges; resolved ones stay for the record. */
export function AlertsList() {
  const session = useSession();
  const { openAlerts, alertsVersion } = useLiveLocks();
  const now = useNow(5000);
  const [alerts, setAlerts] = useState<AlertView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  const [filter, setFilter] = useState<AlertFilter>(NO_FILTER);
  const [sort, setSort] = useState<TableSort | undefined>(undefined);

  // Refetch when the server says alerts changed (raised, resolved or acknowledged).
  useEffect(() => {
    let current = true;
    fetchAlerts()
      .then((a) => current && setAlerts(a))
      .catch((err: unknown) => current && setError(err instanceof Error ? err.message : String(err)));
    return () => {
      current = false;
    };
  }, [alertsVersion, reload]);

  const ack = async (id: string) => {
    const { status, body } = await postJson<{ error?: string }>(session, `/api/alerts/${id}/ack`, {});
    if (status !== 200) setError(body.error ?? `HTTP ${status}`);
    setReload((n) => n + 1);
  };

  const all = useMemo(() => alerts ?? [], [alerts]);
  const shown = useMemo(() => sortAlerts(filterAlerts(all, filter), sort), [all, filter, sort]);
  const rules = useMemo(() => ruleOptions(all), [all]);
  const [zone] = useZone();
  const at = (iso: string) => formatTime(iso, zone);

  return (
    <section>
      <h1 className="mb-3 text-lg font-semibold text-slate-100">
        Alerts <span className="text-sm font-normal text-slate-400">{openAlerts} open</span>
      </h1>
      <div className="mb-3 flex flex-wrap items-center gap-3 text-sm text-slate-400" data-testid="alert-filters">
        <FilterSelect
          label="State"
          value={filter.state}
          onChange={(state) => setFilter({ ...filter, state: state as AlertFilter["state"] })}
          options={["open", "acknowledged", "resolved"].map((v) => ({ value: v, label: v }))}
        />
        <FilterSelect
          label="Rule"
          value={filter.rule}
          onChange={(rule) => setFilter({ ...filter, rule })}
          options={rules.map((r) => ({ value: r.rule, label: `${r.rule} (${r.count})` }))}
        />
        <FilterSelect
          label="Severity"
          value={filter.severity}
          onChange={(severity) => setFilter({ ...filter, severity: severity as AlertFilter["severity"] })}
          options={["critical", "warning", "info"].map((v) => ({ value: v, label: v }))}
        />
        <span data-testid="alerts-shown">
          {shown.length} of {all.length} shown
        </span>
      </div>
      {error ? <p className="mb-2 text-sm text-amber-300">{error}</p> : null}
      <DataTable
        columns={[
          "State",
          { label: "Severity", sortKey: "severity" },
          "Rule",
          "Lock or source",
          "Message and evidence",
          { label: "Raised", sortKey: "raised" },
          { label: "Last seen", sortKey: "lastSeen" },
          { label: "Times", sortKey: "occurrences" },
          "",
        ]}
        sort={sort}
        onSort={(key) => setSort(nextSort(sort, key))}
        testId="alerts-table"
        empty={alerts && shown.length === 0 ? (all.length === 0 ? "No alerts." : "No alerts match the filters.") : null}
      >
        {shown.map((a) => {
          const evidence = evidenceLines(a.evidence, at);
          return (
            <tr key={a.id} data-testid="alert-row" data-state={a.state} data-rule={a.rule} className="align-top">
              <td className={`px-3 py-1.5 ${STATE_CLASS[a.state]}`}>
                {a.state}
                {a.ackedBy ? (
                  <span className="block text-xs text-slate-400" data-testid="alert-acked">
                    by {a.ackedBy}
                    {a.ackedAt ? ` at ${at(a.ackedAt)}` : ""}
                  </span>
                ) : null}
              </td>
              <td className="px-3 py-1.5">
                <span className={`rounded px-1.5 py-0.5 text-xs ring-1 ring-inset ${SEVERITY_CLASS[a.severity]}`}>
                  {a.severity}
                </span>
              </td>
              <td className="px-3 py-1.5 font-mono text-xs">{a.rule}</td>
              <td className="max-w-xs truncate px-3 py-1.5 font-mono text-xs" title={a.resource ?? a.source}>
                {a.lockId ? (
                  <Link href={`/locks/${a.lockId}`} className="text-sky-300 hover:underline">
                    {a.resource}
                  </Link>
                ) : (
                  a.source
                )}
              </td>
              <td className="max-w-md px-3 py-1.5 text-xs text-slate-300">
                {a.message}
                {a.latestHolder ? (
                  <span className="block text-slate-400" data-testid="alert-latest-holder">
                    latest holder: <span className="font-mono">{a.latestHolder}</span>
                  </span>
                ) : null}
                {evidence.length > 0 ? (
                  <details className="mt-1" data-testid="alert-evidence">
                    <summary className="cursor-pointer text-slate-400">evidence ({evidence.length})</summary>
                    <ul className="mt-1 space-y-0.5 font-mono text-[11px] text-slate-300">
                      {evidence.map((line, i) => (
                        <li key={i}>{line}</li>
                      ))}
                    </ul>
                  </details>
                ) : null}
              </td>
              <td className="whitespace-nowrap px-3 py-1.5 font-mono text-xs text-slate-400">
                <Time at={a.raisedAt} relative />
                {a.resolvedAt ? (
                  <span className="block">
                    resolved <Time at={a.resolvedAt} />
                  </span>
                ) : null}
              </td>
              <td className="whitespace-nowrap px-3 py-1.5 text-xs text-slate-400" data-testid="alert-last-seen">
                {a.lastSeenAt ? <span title={at(a.lastSeenAt)}>{relativeTime(a.lastSeenAt, now)}</span> : "—"}
              </td>
              <td className="px-3 py-1.5 text-xs tabular-nums text-slate-300" data-testid="alert-occurrences">
                {a.occurrences ?? 1}
              </td>
              <td className="px-3 py-1.5">
                {a.state === "open" && canRelease(session) ? (
                  <button
                    type="button"
                    onClick={() => void ack(a.id)}
                    className="rounded border border-slate-600 px-2 py-0.5 text-xs hover:bg-slate-800"
                  >
                    Acknowledge
                  </button>
                ) : null}
              </td>
            </tr>
          );
        })}
      </DataTable>
    </section>
  );
}
