"use client";

import type { ReactNode } from "react";
import { liveFreshness, sourceFreshness } from "./freshness";
import { useClock, useLiveLocks } from "./live-locks-provider";

/**
 * Wraps every page: while the browser has lost the dashboard, a banner says so with the age of the last update and
 * the page is dimmed (its countdowns are frozen by useNow); while live, sources whose data is older than their
 * poll interval allows are named in a smaller banner.
 */
export function LiveFrame({ children }: { children: ReactNode }) {
  const { connection, lastUpdateAt, sources } = useLiveLocks();
  const now = useClock(1000);
  const f = liveFreshness(connection, lastUpdateAt, now);
  const stale = f.stale ? [] : sources.map((s) => sourceFreshness(s, now)).filter((s) => s.stale);
  return (
    <>
      {f.banner ? (
        <div
          role="status"
          data-testid="stale-banner"
          className="mb-3 rounded border border-amber-500/50 bg-amber-500/15 px-3 py-2 text-sm text-amber-200"
        >
          {f.banner}
        </div>
      ) : null}
      {stale.length > 0 ? (
        <div
          role="status"
          data-testid="stale-sources"
          className="mb-3 rounded border border-amber-500/30 bg-amber-500/10 px-3 py-1.5 text-xs text-amber-200"
        >
          Stale data from {stale.length === 1 ? "one source" : `${stale.length} sources`}:{" "}
          {stale
            .slice(0, 3)
            .map((s) => `${s.id} (${s.reason})`)
            .join("; ")}
          {stale.length > 3 ? ` and ${stale.length - 3} more` : ""}. Its locks may have changed since.
        </div>
      ) : null}
      <div
        data-stale={f.stale ? "true" : "false"}
        className={f.stale ? "opacity-50 saturate-50 transition-opacity" : ""}
      >
        {children}
      </div>
    </>
  );
}
