"use client";

import { useState } from "react";
import type { Lock } from "@/lib/contract/lock";
import type { ReleaseResult } from "@/lib/contract/release";
import { postJson, useSession } from "../auth/session-provider";
import { OUTCOME_LABEL, releaseBlocker } from "./release-words";
import { stalenessReasons } from "./staleness";

export const OUTCOME_CLASS: Record<string, string> = {
  released: "text-emerald-300",
  "dry-run": "text-sky-300",
  "nothing-to-do": "text-slate-300",
};

/**
 * Force-release, guarded: the operator sees why the lock looks stale and what a dry run would delete where, gives a
 * reason and types the resource name. The agent deletes only if the owner is still the one shown here.
 */
export function ReleasePanel({
  lock,
  heldMs,
  onResult,
  held = true,
  reason: liftedReason,
  onReasonChange,
}: {
  /** The lock as last seen held: the page keeps the panel while the lock flips, so nothing typed is lost. */
  lock: Lock;
  heldMs: number;
  /** A real release's result, shown by the page: the panel goes away with the lock it freed. */
  onResult: (r: ReleaseResult) => void;
  /** False while the lock is not held: the buttons are disabled and say why. */
  held?: boolean;
  /** The reason, when the page owns it (it outlives this panel); the panel keeps its own otherwise. */
  reason?: string;
  onReasonChange?: (reason: string) => void;
}) {
  const session = useSession();
  const [open, setOpen] = useState(false);
  const [ownReason, setOwnReason] = useState("");
  const reason = liftedReason ?? ownReason;
  const setReason = onReasonChange ?? setOwnReason;
  const [confirm, setConfirm] = useState("");
  const [plan, setPlan] = useState<ReleaseResult | null>(null);
  const [busy, setBusy] = useState(false);
  // The owner at the moment the panel opened: a change while it is open must not be released blindly.
  const [observedOwner, setObservedOwner] = useState(lock.owner);
  const [observedSince, setObservedSince] = useState(lock.since);
  // The exact holding (not the owner's display text): what the agent's conditional delete compares.
  const [observedFingerprint, setObservedFingerprint] = useState(lock.ownerFingerprint);

  const call = async (dryRun: boolean) => {
    setBusy(true);
    try {
      const { body } = await postJson<ReleaseResult & { error?: string }>(session, `/api/locks/${lock.id}/release`, {
        expectedOwner: observedOwner,
        expectedSince: observedSince,
        ...(observedFingerprint ? { expectedFingerprint: observedFingerprint } : {}),
        reason,
        dryRun,
        confirm,
      });
      const r: ReleaseResult = body.outcome
        ? body
        : { outcome: "error", message: body.error ?? "failed", plan: [], perNode: [] };
      if (dryRun) setPlan(r);
      else onResult(r);
    } finally {
      setBusy(false);
    }
  };

  if (!open) {
    return (
      <button
        type="button"
        disabled={!held}
        title={held ? undefined : "The lock is not held right now."}
        onClick={() => {
          setObservedOwner(lock.owner);
          setObservedSince(lock.since);
          setObservedFingerprint(lock.ownerFingerprint);
          setOpen(true);
        }}
        className="rounded border border-rose-500/50 px-3 py-1 text-sm text-rose-300 hover:bg-rose-500/10 disabled:opacity-40"
      >
        Force release…
      </button>
    );
  }

  const reasons = stalenessReasons(lock, heldMs);
  const ownerChanged =
    lock.owner !== observedOwner || lock.since !== observedSince || lock.ownerFingerprint !== observedFingerprint;
  const notHeld = !held;
  const dryBlocked = releaseBlocker({ busy, reason, confirmed: true, ownerChanged: false, notHeld });
  const releaseBlocked = releaseBlocker({ busy, reason, confirmed: confirm === lock.resource, ownerChanged, notHeld });
  const ready = releaseBlocked === null;
  return (
    <section className="space-y-3 rounded border border-rose-500/40 bg-rose-950/20 p-4" data-testid="release-panel">
      <h2 className="text-sm font-semibold uppercase tracking-wide text-rose-300">Force release</h2>
      <div className="text-sm">
        <p className="text-slate-400">Why it looks stale:</p>
        {reasons.length > 0 ? (
          <ul className="ml-5 list-disc text-slate-200">
            {reasons.map((r) => (
              <li key={r}>{r}</li>
            ))}
          </ul>
        ) : (
          <p className="text-amber-300">Nothing suggests this lock is stale. Its holder may still be working.</p>
        )}
      </div>
      <p className="text-sm text-slate-400">
        Only deletes if the owner is still{" "}
        <span className="font-mono text-slate-200">{observedOwner ?? "unknown"}</span>.
      </p>
      {ownerChanged ? (
        <p className="text-sm text-amber-300" role="alert">
          The owner changed while this panel was open. Close it and look again.
        </p>
      ) : null}
      <label className="block text-sm text-slate-400">
        Reason (kept in the audit log)
        <textarea
          value={reason}
          onChange={(e) => setReason(e.target.value)}
          rows={2}
          maxLength={1000}
          aria-label="Reason"
          className="mt-1 w-full rounded border border-slate-700 bg-slate-950 px-2 py-1 text-slate-100"
        />
      </label>
      <div>
        <button
          type="button"
          disabled={dryBlocked !== null}
          title={dryBlocked ?? undefined}
          aria-describedby={dryBlocked ? "dry-run-why" : undefined}
          onClick={() => void call(true)}
          className="rounded border border-slate-600 px-3 py-1 text-sm hover:bg-slate-800 disabled:opacity-40"
        >
          Dry run: show what would be deleted
        </button>
        {dryBlocked ? (
          <span id="dry-run-why" className="ml-2 text-xs text-slate-400">
            {dryBlocked}
          </span>
        ) : null}
        {plan ? (
          <div className="mt-2 text-sm" data-testid="release-plan">
            <p className={OUTCOME_CLASS[plan.outcome] ?? "text-amber-300"}>
              {OUTCOME_LABEL[plan.outcome] ?? plan.outcome}: {plan.message}
            </p>
            <ul className="ml-5 list-disc font-mono text-xs text-slate-300">
              {plan.plan.map((s) => (
                <li key={s}>{s}</li>
              ))}
            </ul>
          </div>
        ) : null}
      </div>
      <label className="block text-sm text-slate-400">
        Type the resource name to confirm: <span className="font-mono text-slate-200">{lock.resource}</span>
        <input
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
          aria-label="Confirm resource name"
          className="mt-1 w-full rounded border border-slate-700 bg-slate-950 px-2 py-1 font-mono text-slate-100"
        />
      </label>
      <div className="flex gap-3">
        <button
          type="button"
          disabled={!ready}
          title={releaseBlocked ?? undefined}
          aria-describedby={releaseBlocked ? "release-why" : undefined}
          onClick={() => void call(false)}
          className="rounded bg-rose-600 px-3 py-1 text-sm font-semibold text-white hover:bg-rose-500 disabled:opacity-40"
        >
          Release now
        </button>
        <button type="button" onClick={() => setOpen(false)} className="text-sm text-slate-400 hover:text-slate-100">
          Cancel
        </button>
      </div>
      {releaseBlocked ? (
        <p id="release-why" className="text-xs text-slate-400">
          {releaseBlocked}
        </p>
      ) : null}
    </section>
  );
}
