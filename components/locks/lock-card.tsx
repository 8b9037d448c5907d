"use client";

import Link from "next/link";
import { memo, type ReactNode } from "react";
import { queueLength } from "@/lib/contract/lock-queue";
import type { LiveLock } from "../live/live-locks-provider";
import { BackendLabel } from "../redlock/quorum-badge";
import { shorten } from "./format";
import { HazardBadges } from "./hazard-badges";
import { SourceText } from "./source-text";

/**
 * One lock as a card, for narrow screens: what an operator checks first (the lease left and the hazards) leads,
 * then the resource, the owner and where it lives. The live cells come from the table so both count down alike.
 */
export const LockCard = memo(function LockCard({
  live,
  index,
  ttl,
  heldFor,
  leaving,
  measure,
}: {
  live: LiveLock;
  index: number;
  ttl: ReactNode;
  heldFor: ReactNode;
  leaving: boolean;
  measure: (el: HTMLElement | null) => void;
}) {
  const { lock } = live;
  const waiters = queueLength(lock);
  return (
    <div
      ref={measure}
      data-index={index}
      data-testid={leaving ? "lock-row-released" : "lock-row"}
      data-layout="card"
      data-lock-id={lock.id}
      className={`border-b border-slate-800/70 px-3 py-2 text-sm ${leaving ? "release-fade" : ""}`}
    >
      <div className="flex flex-wrap items-center gap-2" data-testid="card-lead">
        {leaving ? <span className="text-xs italic text-slate-300">released</span> : ttl}
        <HazardBadges hazards={lock.hazards} />
        {waiters > 0 ? (
          <span className="text-xs text-slate-300" data-testid="waiters-count">
            {waiters} waiting
          </span>
        ) : null}
      </div>
      <Link
        href={`/locks/${lock.id}`}
        className="mt-1 block truncate font-mono text-sky-300 hover:underline"
        title={lock.resource}
        data-testid="card-resource"
      >
        {lock.resource}
      </Link>
      <div className="truncate font-mono text-xs text-slate-300" title={lock.owner ?? "unknown"}>
        {shorten(lock.owner, 60)}
      </div>
      <div className="mt-0.5 flex min-w-0 items-center gap-2 text-xs text-slate-400">
        <span className="min-w-0 flex-1">
          <SourceText source={lock.source} />
        </span>
        <span className="shrink-0">
          <BackendLabel lock={lock} />
        </span>
        <span className="shrink-0" title={`rule: ${lock.rule}`}>
          {lock.library}
        </span>
        <span className="shrink-0 font-mono tabular-nums">{heldFor}</span>
      </div>
    </div>
  );
});
