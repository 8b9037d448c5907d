/**
 * When the demo freezes nodes of its Redlock group, so the grid goes through the states operators should know.
 * Pure: the time into the demo in, the node indexes to keep frozen out.
 *
 * One cycle of CYCLE_MS on a group of five (quorum 3):
 *   0-30 s   all up                        -> held
 *   30-40 s  node 4 frozen                 -> held, partial view (one node does not answer)
 *   40-50 s  nodes 3, 4 frozen             -> at-risk (exactly a quorum answers, no spare)
 *   50-58 s  nodes 2, 3, 4 frozen          -> quorum-lost (a lock held a moment ago has 2 votes of 5)
 *   58-60 s  all up again; new acquires resume
 */
export const CYCLE_MS = 60_000;

const STEPS: ReadonlyArray<{ fromMs: number; frozen: readonly number[] }> = [
  { fromMs: 0, frozen: [] },
  { fromMs: 30_000, frozen: [4] },
  { fromMs: 40_000, frozen: [3, 4] },
  { fromMs: 50_000, frozen: [2, 3, 4] },
  { fromMs: 58_000, frozen: [] },
];

export function frozenNodes(elapsedMs: number, nodes: number): number[] {
  if (!Number.isFinite(elapsedMs) || elapsedMs < 0 || nodes < 5) return [];
  const t = elapsedMs % CYCLE_MS;
  let frozen: readonly number[] = [];
  for (const s of STEPS) if (t >= s.fromMs) frozen = s.frozen;
  return frozen.filter((i) => i < nodes);
}
