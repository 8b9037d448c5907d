/** How many wait behind a lock: shared by the dashboard's index (sort by waiters) and the browser's views. */
import type { Lock } from "./lock";

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/**
 * The queue length of a lock: every waiter, not only the ones listed. The agent lists at most a bounded head of a
 * ZooKeeper queue and gives the total in holder.contenders.
 */
export function queueLength(lock: Lock): number {
  const zk = lock.zookeeper;
  const total = num(lock.holder?.contenders);
  if (!zk || total === null) return lock.waiters.length;
  const holders = num(lock.holder?.holders) ?? (zk.contenders.some((c) => c.role === "holder") ? 1 : 0);
  // A single-node lock's waiters are sessions watching it, not contenders: whichever count is larger is the queue.
  return Math.max(total - holders, lock.waiters.length);
}
