import type { Lock } from "@/lib/contract/lock";

/** The quorum of one Redlock lock on its detail page (filled in by the Redlock view). */
export function QuorumPanel({ lock }: { lock: Lock }) {
  if (!lock.quorum) return null;
  const q = lock.quorum;
  return (
    <section data-testid="quorum-panel">
      <h2 className="mb-2 text-sm font-semibold uppercase tracking-wide text-slate-400">Quorum</h2>
      <p className="text-sm">
        {q.state}: {q.votes}/{q.nodes} votes, {q.needed} needed
      </p>
    </section>
  );
}
