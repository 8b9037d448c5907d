"use client";

import { useMemo, useState } from "react";
import type { Lock, ZkWatcher } from "@/lib/contract/lock";
import { formatDuration } from "../locks/format";
import { buildChain, DEFAULT_HEAD, isLongWait, type ChainModel, type ChainNode, type WatchKind } from "./chain-model";

/** How each kind of watch edge looks: solid for facts read from the server, dashed for what the recipe implies. */
const EDGE: Record<WatchKind, { line: string; text: string; label: string; explain: string }> = {
  observed: {
    line: "border-solid border-emerald-400",
    text: "text-emerald-300",
    label: "watch observed",
    explain: "read from the server's own watch table (wchp)",
  },
  inferred: {
    line: "border-dashed border-slate-500",
    text: "text-slate-400",
    label: "watch inferred",
    explain: "inferred from the recipe (four-letter words not allowed)",
  },
  missing: {
    line: "border-dotted border-rose-400",
    text: "text-rose-300",
    label: "no watch seen",
    explain: "the server's watch table has no such watch: nothing will wake this waiter",
  },
  children: {
    line: "border-dashed border-amber-400",
    text: "text-amber-300",
    label: "watches children",
    explain: "watches a directory's children (never listed by wchp): every change wakes every such waiter",
  },
};

const MODE_CLASS: Record<ChainNode["mode"], string> = {
  exclusive: "bg-slate-700/60 text-slate-200",
  read: "bg-sky-500/15 text-sky-300",
  write: "bg-violet-500/15 text-violet-300",
  lease: "bg-teal-500/15 text-teal-300",
  latch: "bg-slate-700/60 text-slate-200",
};

const FLAG_TEXT = {
  persistent: "PERSISTENT: outlives its client",
  stuck: "stuck: watches nothing that will wake it",
  herd: "herd: many sessions watch this node",
  "long-wait": "long wait",
} as const;

function WatcherChip({ w }: { w: ZkWatcher }) {
  return (
    <span
      data-testid="zk-watcher"
      data-observed={w.observed ? "true" : "false"}
      title={`${w.session}${w.host ? ` from ${w.host}` : ""}: ${w.observed ? "observed in the server's watch table" : "inferred from the recipe"}`}
      className={`rounded border px-1 ${w.observed ? "border-solid border-emerald-500/60 text-emerald-300" : "border-dashed border-slate-500 text-slate-400"}`}
    >
      {w.session}
    </span>
  );
}

function Edge({ node }: { node: ChainNode }) {
  const kind = node.watch ?? "inferred";
  const e = EDGE[kind];
  const target = node.waitsFor ?? "?";
  const title = `${node.node} ${kind === "children" ? "watches the children of" : "watches"} ${target}: ${e.explain}`;
  return (
    <div
      data-testid="zk-edge"
      data-watch={kind}
      title={title}
      className="flex w-16 shrink-0 flex-col items-center justify-center self-center px-1 text-[10px] sm:w-28"
      aria-label={title}
    >
      <div className="flex w-full items-center">
        <div className={`flex-1 border-t-2 ${e.line}`} />
        <span className={`-ml-1 text-sm leading-none ${e.text}`}>▶</span>
      </div>
      <span className={`mt-0.5 text-center sm:whitespace-nowrap ${e.text}`}>◂ {e.label}</span>
      {!node.waitsForPrevious && node.waitsFor ? (
        <span className="max-w-full truncate text-slate-400" title={node.waitsFor}>
          on {node.waitsFor}
        </span>
      ) : null}
    </div>
  );
}

function NodeCard({ node, model, now }: { node: ChainNode; model: ChainModel; now: number }) {
  const waitMs = Math.max(0, now - node.ctimeMs);
  const long = isLongWait(node, now, model.longWaitMs);
  const flags = [...node.flags, ...(long ? (["long-wait"] as const) : [])];
  const critical = node.flags.includes("stuck") || node.flags.includes("persistent");
  const ring = critical
    ? "border-rose-500/70 bg-rose-950/30"
    : flags.length > 0
      ? "border-amber-500/60 bg-amber-950/20"
      : node.role === "holder"
        ? "border-emerald-500/50 bg-emerald-950/20"
        : "border-slate-700 bg-slate-900/60";
  const shownWatchers = node.watchers.slice(0, 3);
  return (
    <div
      data-testid="zk-node"
      data-role={node.role}
      data-node={node.node}
      data-watch={node.watch ?? ""}
      className={`w-60 shrink-0 rounded border p-2 text-xs ${ring}`}
    >
      <div className="mb-1 flex flex-wrap items-center gap-1">
        <span
          className={`rounded px-1.5 py-0.5 text-[10px] font-semibold uppercase ${node.role === "holder" ? "bg-emerald-500/20 text-emerald-300" : "bg-slate-700/60 text-slate-300"}`}
        >
          {node.role === "holder" ? "holder" : `waiter #${node.position}`}
        </span>
        <span className={`rounded px-1.5 py-0.5 text-[10px] ${MODE_CLASS[node.mode]}`}>{node.mode}</span>
        {flags.map((f) => (
          <span
            key={f}
            data-testid="zk-node-flag"
            data-flag={f}
            title={FLAG_TEXT[f]}
            className={`rounded px-1.5 py-0.5 text-[10px] ${f === "stuck" || f === "persistent" ? "bg-rose-500/20 text-rose-300" : "bg-amber-500/20 text-amber-300"}`}
          >
            {f}
          </span>
        ))}
      </div>
      <div className="truncate font-mono text-slate-100" title={node.node} data-testid="zk-node-name">
        {node.node}
      </div>
      <dl className="mt-1 grid grid-cols-[3.5rem_1fr] gap-x-1 font-mono text-[11px] leading-4">
        <dt className="font-sans text-slate-400">seq</dt>
        <dd>{node.sequence ?? "—"}</dd>
        <dt className="font-sans text-slate-400">session</dt>
        <dd className="truncate" title={node.session}>
          {node.session}
          {node.ephemeral ? "" : " (none)"}
        </dd>
        <dt className="font-sans text-slate-400">host</dt>
        <dd className="truncate" title={node.host ?? "unknown"}>
          {node.host ?? "—"}
        </dd>
        <dt className="font-sans text-slate-400">{node.role === "holder" ? "queued" : "waiting"}</dt>
        <dd data-testid="zk-wait" data-ms={waitMs} className={long ? "text-amber-300" : ""}>
          {formatDuration(waitMs)}
        </dd>
        <dt className="font-sans text-slate-400">recipe</dt>
        <dd className="truncate" title={model.recipe}>
          {model.recipe}
        </dd>
      </dl>
      {node.watchers.length > 0 ? (
        <div className="mt-1 flex flex-wrap items-center gap-1 font-mono text-[10px]">
          <span className="font-sans text-slate-400">watched by</span>
          {shownWatchers.map((w) => (
            <WatcherChip key={w.session} w={w} />
          ))}
          {node.watchers.length > shownWatchers.length ? (
            <span className="text-slate-400">+{node.watchers.length - shownWatchers.length}</span>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

const MAX_HOLDERS_DRAWN = 8;

/**
 * One lock's wait chain as a row of cards: the holders, then the head of the queue in order, each arrow saying who
 * watches whom and whether that was observed or inferred. Long queues show their head and a count; more can be
 * revealed in steps, up to what the agent listed.
 */
export function WaitChain({ lock, now, headSize = DEFAULT_HEAD }: { lock: Lock; now: number; headSize?: number }) {
  const [head, setHead] = useState(headSize);
  const model = useMemo(() => buildChain(lock, { headSize: head }), [lock, head]);
  if (!model) return null;
  const holders = model.holders.slice(0, MAX_HOLDERS_DRAWN);
  return (
    <div data-testid="zk-chain" data-lock-id={model.lockId} className="overflow-x-auto">
      <div className="flex flex-wrap items-stretch gap-y-3">
        {holders.length > 0 ? (
          <div className="flex shrink-0 flex-col gap-2" data-testid="zk-holders">
            {holders.map((h) => (
              <NodeCard key={h.node} node={h} model={model} now={now} />
            ))}
            {model.holders.length > holders.length ? (
              <span className="text-xs text-slate-400">+{model.holders.length - holders.length} more holders</span>
            ) : null}
          </div>
        ) : (
          <div className="w-60 shrink-0 rounded border border-dashed border-slate-700 p-2 text-xs text-slate-400">
            no holder: every contender waits
          </div>
        )}
        {model.waiters.map((w) => (
          <div key={w.node} className="flex shrink-0 items-stretch">
            <Edge node={w} />
            <NodeCard node={w} model={model} now={now} />
          </div>
        ))}
        {model.hiddenWaiters > 0 ? (
          <div className="flex shrink-0 items-center gap-2 pl-3 text-xs" data-testid="zk-more">
            <span className="text-slate-400">
              … {model.hiddenWaiters.toLocaleString("en-US")} more waiter{model.hiddenWaiters === 1 ? "" : "s"}
            </span>
            {model.moreAvailable > 0 ? (
              <button
                type="button"
                onClick={() => setHead((h) => h + 100)}
                className="rounded border border-slate-700 px-2 py-0.5 text-slate-300 hover:bg-slate-800"
              >
                show {Math.min(100, model.moreAvailable)} more
              </button>
            ) : (
              <span className="text-slate-400">
                (the agent lists the first {model.waiters.length + model.holders.length})
              </span>
            )}
          </div>
        ) : null}
      </div>
    </div>
  );
}
