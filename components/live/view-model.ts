/** The browser's copy of one subscribed view of the locks. Pure; types only from the contract. */
import type { Lock } from "../../lib/contract/lock";
import type { ViewUpdate } from "../../lib/contract/socket";

/** A lock as received, with the browser's own clock at receipt so TTLs count down without trusting other clocks. */
export interface LiveLock {
  lock: Lock;
  receivedAt: number;
}

/** Applies one view update to the rows a panel holds; never mutates `prev` (it is React state). */
export function applyViewUpdate(
  prev: { byId: Map<string, LiveLock>; order: string[] },
  u: ViewUpdate,
  receivedAt: number,
): { byId: Map<string, LiveLock>; order: string[] } {
  if (u.full) {
    return { byId: new Map(u.locks.map((l) => [l.id, { lock: l, receivedAt }])), order: u.locks.map((l) => l.id) };
  }
  const byId = new Map(prev.byId);
  for (const id of u.removed) byId.delete(id);
  for (const l of u.locks) byId.set(l.id, { lock: l, receivedAt });
  const order = u.order ?? prev.order.filter((id) => byId.has(id));
  return { byId, order };
}
