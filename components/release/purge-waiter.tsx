"use client";

import { useState } from "react";
import type { Lock, Waiter } from "@/lib/contract/lock";
import type { ReleaseResult } from "@/lib/contract/release";
import { postJson, useSession } from "../auth/session-provider";

/**
 * Removes one dead waiter (past its deadline) from a Redisson fair lock's queue: the threads behind it stop waiting
 * for a thread that is gone. Same guards as a release: a reason, the resource typed, audited.
 */
export function PurgeWaiter({
  lock,
  waiter,
  onResult,
}: {
  lock: Lock;
  waiter: Waiter;
  onResult: (r: ReleaseResult) => void;
}) {
  const session = useSession();
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState("");
  const [confirm, setConfirm] = useState("");
  const [busy, setBusy] = useState(false);
  if (!open) {
    return (
      <button
        type="button"
        onClick={() => setOpen(true)}
        className="ml-2 text-xs text-rose-300 underline hover:text-rose-200"
      >
        purge…
      </button>
    );
  }
  const submit = async () => {
    setBusy(true);
    try {
      const { body } = await postJson<ReleaseResult & { error?: string }>(session, `/api/locks/${lock.id}/release`, {
        expectedOwner: lock.owner,
        reason,
        confirm,
        purgeWaiter: waiter.owner,
      });
      onResult(body.outcome ? body : { outcome: "error", message: body.error ?? "failed", plan: [], perNode: [] });
      setOpen(false);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span className="ml-2 inline-flex flex-wrap items-center gap-2 font-sans text-xs" data-testid="purge-waiter">
      <input
        aria-label="Purge reason"
        placeholder="reason"
        value={reason}
        onChange={(e) => setReason(e.target.value)}
        className="rounded border border-slate-700 bg-slate-950 px-1 py-0.5"
      />
      <input
        aria-label="Confirm resource name"
        placeholder="type the resource name"
        value={confirm}
        onChange={(e) => setConfirm(e.target.value)}
        className="rounded border border-slate-700 bg-slate-950 px-1 py-0.5 font-mono"
      />
      <button
        type="button"
        disabled={busy || reason.trim().length < 3 || confirm !== lock.resource}
        onClick={() => void submit()}
        className="rounded bg-rose-600 px-2 py-0.5 font-semibold text-white disabled:opacity-40"
      >
        Purge waiter
      </button>
      <button type="button" onClick={() => setOpen(false)} className="text-slate-400">
        cancel
      </button>
    </span>
  );
}
