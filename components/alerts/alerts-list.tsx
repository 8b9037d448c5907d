"use client";

import Link from "next/link";
import { Time } from "../time/time";
import { useEffect, useState } from "react";
import type { AlertView, AlertsResponse } from "@/lib/contract/alerts";
import { canRelease, postJson, useSession } from "../auth/session-provider";
import { SEVERITY_CLASS } from "../locks/format";
import { DataTable } from "../ui/data-table";
import { useLiveLocks } from "../live/live-locks-provider";

async function fetchAlerts(): Promise<AlertView[]> {
  const res = await fetch("/api/alerts?limit=500", { cache: "no-store" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return ((await res.json()) as AlertsResponse).alerts;
}

const STATE_CLASS = { open: "text-rose-300", acknowledged: "text-amber-300", resolved: "text-slate-500" } as const;

/** Open alerts first; an operator acknowledges; resolved ones stay for the record. */
export function AlertsList() {
  const session = useSession();
  const { openAlerts, alertsVersion } = useLiveLocks();
  const [alerts, setAlerts] = useState<AlertView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);

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

  return (
    <section>
      <h1 className="mb-3 text-lg font-semibold text-slate-100">
        Alerts <span className="text-sm font-normal text-slate-400">{openAlerts} open</span>
      </h1>
      {error ? <p className="mb-2 text-sm text-amber-300">{error}</p> : null}
      <DataTable
        columns={["State", "Severity", "Rule", "Lock or source", "Message", "Raised", ""]}
        testId="alerts-table"
        empty={alerts && alerts.length === 0 ? "No alerts." : null}
      >
        {(alerts ?? []).map((a) => (
          <tr key={a.id} data-testid="alert-row" data-state={a.state} data-rule={a.rule}>
            <td className={`px-3 py-1.5 ${STATE_CLASS[a.state]}`}>
              {a.state}
              {a.ackedBy ? <span className="block text-xs text-slate-500">by {a.ackedBy}</span> : null}
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
            <td className="max-w-md px-3 py-1.5 text-xs text-slate-300">{a.message}</td>
            <td className="whitespace-nowrap px-3 py-1.5 font-mono text-xs text-slate-400">
              <Time at={a.raisedAt} relative />
              {a.resolvedAt ? (
                <span className="block">
                  resolved <Time at={a.resolvedAt} />
                </span>
              ) : null}
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
        ))}
      </DataTable>
    </section>
  );
}
