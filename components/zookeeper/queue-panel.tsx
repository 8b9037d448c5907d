import type { Lock } from "@/lib/contract/lock";

/** The contender queue of one ZooKeeper lock on its detail page (filled in by the ZooKeeper view). */
export function QueuePanel({ lock }: { lock: Lock }) {
  if (!lock.zookeeper) return null;
  return (
    <section data-testid="zk-queue-panel">
      <h2 className="mb-2 text-sm font-semibold uppercase tracking-wide text-slate-400">Queue</h2>
      <p className="text-sm">
        {lock.zookeeper.recipe}: {lock.zookeeper.contenders.length} contenders
      </p>
    </section>
  );
}
