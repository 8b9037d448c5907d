import type { Lock, QuorumView } from "@/lib/contract/lock";
import { quorumSummary } from "./redlock-model";
import { STATE_CLASS } from "./redlock-style";

/** "3/5 held": the quorum of a Redlock lock in one glance; "partial" when some nodes did not answer. */
export function QuorumBadge({ quorum }: { quorum: QuorumView }) {
  return (
    <span className="inline-flex items-center gap-1 whitespace-nowrap" data-testid="quorum-summary">
      <span
        className={`rounded px-1.5 py-0.5 font-mono text-[11px] font-medium ring-1 ring-inset ${STATE_CLASS[quorum.state]}`}
        title={`${quorum.votes} of ${quorum.nodes} nodes hold the token, ${quorum.needed} needed`}
      >
        {quorumSummary(quorum)}
      </span>
      {quorum.partial ? <PartialMarker /> : null}
    </span>
  );
}

export function PartialMarker() {
  return (
    <span
      className="rounded border border-dashed border-amber-400/70 px-1 text-[10px] uppercase tracking-wide text-amber-300"
      title="Some nodes did not answer: votes are counted from the ones that did"
      data-testid="partial"
    >
      partial
    </span>
  );
}

/** A lock's backend, with its Redlock quorum badge when it has one: the table row and the phone card show the same. */
export function BackendLabel({ lock }: { lock: Pick<Lock, "backend" | "quorum"> }) {
  return (
    <>
      {lock.backend}
      {lock.quorum ? (
        <>
          {" "}
          <QuorumBadge quorum={lock.quorum} />
        </>
      ) : null}
    </>
  );
}
