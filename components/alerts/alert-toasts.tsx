"use client";

import Link from "next/link";
import { useEffect } from "react";
import { SEVERITY_CLASS } from "../locks/format";
import { useLiveLocks } from "../live/live-locks-provider";

/** New alerts pop up in a corner for a few seconds, with a link to the lock's history. */
export function AlertToasts() {
  const { raisedAlerts, dismissAlert } = useLiveLocks();
  useEffect(() => {
    if (raisedAlerts.length === 0) return;
    const oldest = raisedAlerts[raisedAlerts.length - 1]!;
    const t = setTimeout(() => dismissAlert(oldest.id), 15_000);
    return () => clearTimeout(t);
  }, [raisedAlerts, dismissAlert]);
  return (
    <div className="fixed bottom-4 right-4 z-20 flex w-96 flex-col gap-2" aria-live="polite">
      {raisedAlerts.map((a) => (
        <div
          key={a.id}
          role="alert"
          data-testid="alert-toast"
          className={`rounded border bg-slate-900/95 p-3 text-sm shadow-lg ring-1 ring-inset ${SEVERITY_CLASS[a.severity]}`}
        >
          <div className="flex items-start gap-2">
            <div className="flex-1">
              <p className="font-semibold">
                {a.rule} <span className="font-normal opacity-80">({a.severity})</span>
              </p>
              <p className="break-all font-mono text-xs text-slate-200">{a.resource ?? a.source}</p>
              <p className="mt-1 text-xs text-slate-300">{a.message}</p>
              {a.lockId ? (
                <Link href={`/locks/${a.lockId}`} className="mt-1 inline-block text-xs text-sky-300 hover:underline">
                  Open the lock&apos;s history
                </Link>
              ) : null}
            </div>
            <button
              type="button"
              aria-label="Dismiss"
              onClick={() => dismissAlert(a.id)}
              className="text-slate-400 hover:text-slate-100"
            >
              ×
            </button>
          </div>
        </div>
      ))}
    </div>
  );
}
