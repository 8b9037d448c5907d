"use client";

import Link from "next/link";
import { useEffect, useState } from "react";
import type { LockDetailResponse } from "@/lib/contract/api";
import type { Lock, LockEvent } from "@/lib/contract/lock";
import { canRelease, useSession } from "../auth/session-provider";
import { useLiveLocks, useLockView, useNow } from "../live/live-locks-provider";
import { QuorumPanel } from "../redlock/quorum-panel";
import { PurgeWaiter } from "../release/purge-waiter";
import { OUTCOME_CLASS, ReleasePanel } from "../release/release-panel";
import { OUTCOME_LABEL } from "../release/release-words";
import { QueuePanel } from "../zookeeper/queue-panel";
import { RELEASE_ROLE, type ReleaseResult } from "@/lib/contract/release";
import { DbLockPanel } from "../database/db-lock-panel";
import { LockContention } from "../history/lock-contention";
import { holderLabel, holderValue, unknownLockMessage } from "./detail-labels";
import { EventLog } from "./event-log";
import { formatDuration, remainingTtl } from "./format";
import { HazardBadges } from "./hazard-badges";
import { holdStatus } from "./lease-view";
import { TtlCell } from "./ttl-cell";
import { Time, useZone } from "../time/time";

/** The lock and its stored history; null when the dashboard knows nothing of it (404). */
async function fetchLockDetail(id: string): Promise<LockDetailResponse | null> {
  const res = await fetch(`/api/locks/${encodeURIComponent(id)}`, { cache: "no-store" });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as LockDetailResponse;
}

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    // On a phone the label sits above its value: a full time ("since 2026-12-01 13:01:08 UTC") needs the width.
    <div className="grid gap-x-2 py-1 text-sm sm:grid-cols-[9rem_1fr]">
      <dt className="text-slate-400">{label}</dt>
      <dd className="break-all font-mono text-slate-200">{children}</dd>
    </div>
  );
}

const STATUS_TONE = {
  held: "bg-emerald-500/15 text-emerald-300",
  ended: "bg-amber-500/15 text-amber-300",
  gone: "bg-slate-700/60 text-slate-300",
} as const;

/** The same holding: the exact-holding fingerprint where both carry one, else the same owner since the same time. */
function sameHolding(a: Lock, b: Lock): boolean {
  if (a.ownerFingerprint && b.ownerFingerprint) return a.ownerFingerprint === b.ownerFingerprint && a.since === b.since;
  return a.owner === b.owner && a.since === b.since;
}

export function LockDetail({ id }: { id: string }) {
  const { recentEvents } = useLiveLocks();
  // A subscription to this one lock: the page follows it live without receiving any other.
  const view = useLockView({ id, limit: 1 });
  const session = useSession();
  const now = useNow();
  const [zone] = useZone();
  const [stored, setStored] = useState<Lock | null>(null);
  const [lastEvent, setLastEvent] = useState<LockEvent | null>(null);
  const [missing, setMissing] = useState(false);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [releaseResult, setReleaseResult] = useState<ReleaseResult | null>(null);
  // The holding this operator's release just deleted, and the last event known then: the agent's answer proves it
  // gone, while its removal reaches this page through the dashboard's store and socket (seconds under load).
  const [released, setReleased] = useState<{ lock: Lock; lastEventId: string | null } | null>(null);
  // The reason typed into the force-release panel belongs to the page: it survives the lock flipping between held
  // and not held, which is exactly when an operator is typing it.
  const [reason, setReason] = useState("");

  // Reload whenever an event for this lock is pushed.
  const latestForLock = recentEvents.find((e) => e.lockId === id)?.id;
  useEffect(() => {
    let current = true;
    fetchLockDetail(id)
      .then((body) => {
        if (!current) return;
        setStored(body?.lock ?? null);
        setLastEvent(body?.events[0] ?? null);
        setMissing(body === null);
        setLoaded(true);
        setError(null);
      })
      .catch((err: unknown) => {
        if (current) setError(`Could not load the lock: ${err instanceof Error ? err.message : String(err)}`);
      });
    return () => {
      current = false;
    };
  }, [id, latestForLock]);

  const liveRow = view.rows[0];
  const live = liveRow && !(released && sameHolding(liveRow.lock, released.lock)) ? liveRow : undefined;
  const lock = live?.lock ?? null;
  // The last holding seen live: while the lock is not held its rows stay in place, greyed, so nothing jumps.
  const [lastLive, setLastLive] = useState<Lock | null>(null);
  const [lastReceivedAt, setLastReceivedAt] = useState(0);
  if (live && lastLive !== live.lock) {
    setLastLive(live.lock);
    setLastReceivedAt(live.receivedAt);
  }
  const shownLock = lock ?? lastLive ?? stored;
  const last = recentEvents.find((e) => e.lockId === id) ?? lastEvent;
  const remaining = lock ? remainingTtl(lock.ttlMs, live!.receivedAt, now) : null;
  // Until an event newer than the release arrives (its own "released", or a new holder's), the release says it.
  const lastType = released && (last?.id ?? null) === released.lastEventId ? "released" : (last?.type ?? null);
  const status =
    missing && !lock
      ? { label: "does not exist", tone: "gone" as const }
      : holdStatus(lock !== null, remaining, lastType);

  return (
    <div className="space-y-6">
      <div className="flex items-center gap-3 text-sm">
        <Link href="/" className="text-slate-400 hover:text-slate-100">
          ← Locks
        </Link>
      </div>
      <section className="rounded border border-slate-800 bg-slate-900/40 p-4">
        <div className="mb-3 flex flex-wrap items-center gap-3">
          <h1 className="break-all font-mono text-lg text-slate-100" data-testid="detail-resource">
            {shownLock?.resource ?? last?.resource ?? id}
          </h1>
          <span
            data-testid="detail-status"
            className={`rounded px-2 py-0.5 text-xs font-medium ${STATUS_TONE[status.tone]}`}
          >
            {status.label}
          </span>
          {lock ? <HazardBadges hazards={lock.hazards} /> : null}
        </div>
        {missing && !lock ? (
          <p className="text-sm text-amber-300" role="alert" data-testid="detail-missing">
            {unknownLockMessage(id)}
          </p>
        ) : shownLock ? (
          <>
            <p className="mb-1 min-h-5 text-xs text-slate-400" data-testid="detail-held-note">
              {lock ? "" : "Not held right now. The last holding seen is shown greyed; its history is below."}
            </p>
            <dl className={lock ? "" : "opacity-50"} data-testid="detail-fields">
              <Field label="Owner">{shownLock.owner ?? "unknown"}</Field>
              <Field label="TTL">{lock ? <TtlCell remaining={remaining} total={lock.ttlMs} /> : "— (not held)"}</Field>
              <Field label="Held for">
                {lock ? (
                  <>
                    {formatDuration(Math.max(0, now - Date.parse(lock.since)))} (since <Time at={lock.since} />)
                  </>
                ) : (
                  <>
                    — (held from <Time at={shownLock.since} />)
                  </>
                )}
              </Field>
              <Field label="Backend / source">
                {shownLock.backend} · {shownLock.source}
              </Field>
              <Field label="Library">
                {shownLock.library} <span className="text-slate-400">(rule {shownLock.rule})</span>
              </Field>
              <Field label="Type">{shownLock.kind}</Field>
              {shownLock.holder
                ? Object.entries(shownLock.holder).map(([k, v]) => (
                    <Field key={k} label={`Holder: ${holderLabel(k)}`}>
                      {holderValue(k, v, zone, now)}
                    </Field>
                  ))
                : null}
              {shownLock.holders ? (
                <Field label={`Permit holders (${shownLock.holdersTotal ?? shownLock.holders.length})`}>
                  <ul data-testid="permit-holders">
                    {shownLock.holders.map((h) => (
                      <li key={h.owner}>
                        {h.owner}
                        {h.since ? (
                          <span className="text-slate-400">
                            {" "}
                            since <Time at={h.since} relative />
                          </span>
                        ) : null}
                      </li>
                    ))}
                  </ul>
                </Field>
              ) : null}
              <Field label="Value">{shownLock.valuePreview ?? "—"}</Field>
              {shownLock.hazards.map((h) => (
                <Field key={h.code} label={`Hazard (${h.severity})`}>
                  <span className="font-sans">{h.message}</span>
                </Field>
              ))}
            </dl>
          </>
        ) : (
          <p className="text-sm text-slate-400">
            {loaded ? "Not held right now. Its history is below." : error ? "" : "Loading…"}
          </p>
        )}
        {error ? <p className="text-sm text-amber-300">{error}</p> : null}
      </section>
      {releaseResult ? (
        <p
          className={`rounded border border-slate-800 px-3 py-2 text-sm ${OUTCOME_CLASS[releaseResult.outcome] ?? "text-amber-300"}`}
          role="status"
          data-testid="release-result"
        >
          {OUTCOME_LABEL[releaseResult.outcome] ?? releaseResult.outcome}: {releaseResult.message}
          {releaseResult.perNode.length > 1
            ? ` (${releaseResult.perNode.map((n) => `${n.node}: ${n.outcome}`).join(", ")})`
            : ""}
        </p>
      ) : null}
      {/* Kept while the lock flips to not held (its buttons then say why they are disabled): nothing typed is lost. */}
      {lastLive && canRelease(session) && (RELEASE_ROLE[lastLive.backend] !== "admin" || session?.role === "admin") ? (
        <ReleasePanel
          lock={lastLive}
          held={lock !== null}
          heldMs={Math.max(0, now - Date.parse(lastLive.since))}
          onResult={(r) => {
            setReleaseResult(r);
            if (r.outcome === "released" && lock) setReleased({ lock, lastEventId: last?.id ?? null });
          }}
          reason={reason}
          onReasonChange={setReason}
        />
      ) : null}
      {lastLive ? (
        // The last holding's panels stay, greyed and inert, while the lock is not held: the page does not jump.
        <div className={lock ? "space-y-6" : "pointer-events-none space-y-6 opacity-50"} aria-hidden={!lock}>
          <QuorumPanel lock={lastLive} receivedAt={lastReceivedAt} />
          <QueuePanel lock={lastLive} />
          <DbLockPanel lock={lastLive} />
        </div>
      ) : null}
      {/* A ZooKeeper queue is drawn by the queue panel above, head first: thousands of rows would bury the page. */}
      {lock && lock.waiters.length > 0 && !lock.zookeeper && !lock.database ? (
        <section>
          <h2 className="mb-2 text-sm font-semibold uppercase tracking-wide text-slate-400">Waiters</h2>
          <ol className="space-y-1 text-sm" data-testid="waiters">
            {lock.waiters.map((w, i) => (
              <li key={`${w.owner}-${i}`} className="font-mono">
                {i + 1}. {w.owner}{" "}
                {w.since ? (
                  <span className="text-slate-400">
                    since <Time at={w.since} relative />
                  </span>
                ) : null}{" "}
                {w.detail ? <span className="text-slate-400">{w.detail}</span> : null}
                {/* Only Redisson fair-lock waiters past their deadline: a queue entry whose thread is gone. */}
                {canRelease(session) && lock.library === "redisson" && w.detail?.includes("(passed)") ? (
                  <PurgeWaiter lock={lock} waiter={w} onResult={setReleaseResult} />
                ) : null}
              </li>
            ))}
          </ol>
        </section>
      ) : null}
      {missing && !lock ? null : (
        <>
          <LockContention
            lockId={id}
            refreshKey={latestForLock}
            lock={shownLock}
            liveHolders={lock ? (lock.holders ?? [{ owner: lock.owner, since: lock.since }]) : undefined}
          />
          <EventLog lockId={id} refreshKey={latestForLock} />
        </>
      )}
    </div>
  );
}
