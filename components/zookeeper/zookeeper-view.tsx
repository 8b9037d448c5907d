"use client";

import Link from "next/link";
import { useMemo, useState } from "react";
import type { Hazard, Lock, SourceStatus } from "@/lib/contract/lock";
import { useLiveLocks, useLockView, useNow } from "../live/live-locks-provider";
import { SEVERITY_CLASS } from "../locks/format";
import { HazardBadges } from "../locks/hazard-badges";
import { compareParents, matchesFilter, queueLength } from "./chain-model";
import { WaitChain } from "./wait-chain";
import { HazardsOnlyToggle, SearchFilter } from "../ui/list-filters";
import { Time } from "../time/time";

const PARENTS_STEP = 50;

function HazardLines({ hazards, testId }: { hazards: readonly Hazard[]; testId: string }) {
  if (hazards.length === 0) return null;
  return (
    <ul className="space-y-1 text-xs">
      {hazards.map((h) => (
        <li
          key={h.code}
          data-testid={testId}
          data-code={h.code}
          className={`rounded px-2 py-1 ring-1 ring-inset [overflow-wrap:anywhere] ${SEVERITY_CLASS[h.severity]}`}
        >
          <span className="font-semibold">{h.code}</span>: {h.message}
        </li>
      ))}
    </ul>
  );
}

function SourceCard({ source }: { source: SourceStatus }) {
  return (
    <div className="rounded border border-slate-800 bg-slate-900/40 p-3 text-sm" data-testid="zk-source">
      <div className="flex flex-wrap items-center gap-2">
        <span className={`h-2 w-2 rounded-full ${source.up ? "bg-emerald-400" : "bg-rose-500"}`} aria-hidden />
        <span className="font-mono text-slate-100">{source.id}</span>
        <span className="text-xs text-slate-400">
          {source.up ? "up" : "down"} · {source.locks} lock{source.locks === 1 ? "" : "s"}
          {source.lastScanAt ? (
            <>
              {" "}
              · last resync <Time at={source.lastScanAt} relative />
            </>
          ) : null}
        </span>
      </div>
      {source.error ? <p className="mt-1 text-xs text-rose-300">{source.error}</p> : null}
      {source.hazards && source.hazards.length > 0 ? (
        <div className="mt-2">
          <HazardLines hazards={source.hazards} testId="zk-source-hazard" />
        </div>
      ) : null}
    </div>
  );
}

function ParentSection({ lock, now }: { lock: Lock; now: number }) {
  const zk = lock.zookeeper!;
  const waiting = queueLength(lock);
  return (
    <section
      className="space-y-2 rounded border border-slate-800 bg-slate-900/30 p-3"
      data-testid="zk-parent"
      data-resource={lock.resource}
    >
      <div className="flex flex-wrap items-center gap-x-3 gap-y-1">
        <Link href={`/locks/${lock.id}`} className="break-all font-mono text-sm text-sky-300 hover:underline">
          {lock.resource}
        </Link>
        <span className="text-xs text-slate-400">
          {zk.recipe} · {lock.library}
        </span>
        <span className="text-xs text-slate-300" data-testid="zk-queue-length" data-waiting={waiting}>
          {lock.owner ? "1 holder" : "no holder"}
          {typeof lock.holder?.holders === "number" && lock.holder.holders > 1
            ? ` (${lock.holder.holders} holding)`
            : ""}
          {" · "}
          {waiting.toLocaleString("en-US")} waiting
        </span>
        <span
          className={`rounded px-1.5 py-0.5 text-[10px] ${zk.watchesObserved ? "bg-emerald-500/15 text-emerald-300" : "bg-slate-700/60 text-slate-300"}`}
          title={
            zk.watchesObserved
              ? "watches read from the server's watch table (wchp, cons)"
              : "four-letter words not allowed: watches inferred from the recipe"
          }
          data-testid="zk-watch-source"
        >
          watches {zk.watchesObserved ? "observed" : "inferred"}
        </span>
        <span className="font-mono text-[11px] text-slate-400">{lock.source}</span>
        <HazardBadges hazards={lock.hazards} />
      </div>
      <HazardLines hazards={lock.hazards} testId="zk-lock-hazard" />
      <WaitChain lock={lock} now={now} />
    </section>
  );
}

const ZK_VIEW = { backend: "zookeeper", sort: "-hazards", limit: 1000 };

/** ZooKeeper lock parents: a live wait-chain diagram per parent, with source- and lock-level hazards. */
export function ZookeeperView() {
  const { sources, connection } = useLiveLocks();
  // Its own subscription: ZooKeeper lock parents only, worst first, at most 1,000 (shown PARENTS_STEP at a time).
  const { rows: locks } = useLockView(ZK_VIEW);
  const now = useNow(1000);
  const [query, setQuery] = useState("");
  const [hazardsOnly, setHazardsOnly] = useState(false);
  const [limit, setLimit] = useState(PARENTS_STEP);

  const zkSources = sources.filter((s) => s.kind === "zookeeper");
  const parents = useMemo(
    () =>
      locks
        .map((l) => l.lock)
        .filter((l) => l.backend === "zookeeper" && l.zookeeper)
        .filter((l) => (!hazardsOnly || l.hazards.length > 0) && matchesFilter(l, query))
        .sort(compareParents),
    [locks, query, hazardsOnly],
  );
  const shown = parents.slice(0, limit);

  return (
    <div className="space-y-4" data-testid="zk-view">
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-lg font-semibold text-slate-100">
          ZooKeeper locks{" "}
          <span className="text-sm font-normal text-slate-400" data-testid="zk-parent-count">
            {parents.length}
          </span>
        </h1>
        <SearchFilter
          value={query}
          onChange={setQuery}
          placeholder="Filter by path, node, session, host"
          label="Filter lock parents"
        />
        <HazardsOnlyToggle checked={hazardsOnly} onChange={setHazardsOnly} />
        <span className="ml-auto flex items-center gap-3 text-[11px] text-slate-400" aria-label="Legend">
          <span className="flex items-center gap-1">
            <span className="inline-block w-6 border-t-2 border-solid border-emerald-400" /> observed watch
          </span>
          <span className="flex items-center gap-1">
            <span className="inline-block w-6 border-t-2 border-dashed border-slate-500" /> inferred watch
          </span>
          <span className="flex items-center gap-1">
            <span className="inline-block w-6 border-t-2 border-dotted border-rose-400" /> no watch seen
          </span>
          <span className="flex items-center gap-1">
            <span className="inline-block w-6 border-t-2 border-dashed border-amber-400" /> watches children
          </span>
        </span>
      </div>
      {zkSources.length > 0 ? (
        <div className="grid gap-2 md:grid-cols-2">
          {zkSources.map((s) => (
            <SourceCard key={`${s.agentId}-${s.id}`} source={s} />
          ))}
        </div>
      ) : null}
      {shown.map((l) => (
        <ParentSection key={l.id} lock={l} now={now} />
      ))}
      {parents.length > shown.length ? (
        <button
          type="button"
          onClick={() => setLimit((n) => n + PARENTS_STEP)}
          className="rounded border border-slate-700 px-3 py-1 text-sm text-slate-300 hover:bg-slate-800"
        >
          Show {Math.min(PARENTS_STEP, parents.length - shown.length)} more of {parents.length - shown.length} lock
          parents
        </button>
      ) : null}
      {parents.length === 0 ? (
        <p className="px-3 py-8 text-center text-sm text-slate-400" data-testid="zk-empty">
          {connection !== "live"
            ? "Connecting to the dashboard…"
            : zkSources.length === 0
              ? "No agent watches a ZooKeeper ensemble (set ZK_CONNECT)."
              : query || hazardsOnly
                ? "No lock parent matches the filter."
                : "No ZooKeeper lock is held right now."}
        </p>
      ) : null}
    </div>
  );
}
