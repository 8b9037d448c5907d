import type { RankBy, TopContended } from "@/lib/contract/alerts";
import { formatDuration } from "../locks/format";

type Row = TopContended["resources"][number];

/** The History page's ranking choices, in words, and each one's figure for a row (pure). */
export const RANK_CHOICES: { by: RankBy; label: string; column: string; value: (r: Row) => string }[] = [
  {
    by: "contention",
    label: "contention",
    column: "Acquired + taken over",
    value: (r) => String(r.acquisitions + r.ownerChanges),
  },
  { by: "wait", label: "wait time", column: "Waited in total", value: (r) => waitText(r) },
  { by: "waiters", label: "waiters", column: "Acquisitions that waited", value: (r) => String(r.waited ?? 0) },
  { by: "takeovers", label: "takeovers", column: "Taken over", value: (r) => String(r.ownerChanges) },
  {
    by: "no-ttl",
    label: "time stuck without TTL",
    column: "Held without TTL",
    value: (r) => formatDuration(r.noTtlMs ?? 0),
  },
];

function waitText(r: Row): string {
  const total = r.waitMsTotal ?? 0;
  return r.waitMsMax ? `${formatDuration(total)} (longest ${formatDuration(r.waitMsMax)})` : formatDuration(total);
}

export function rankChoice(by: RankBy) {
  return RANK_CHOICES.find((c) => c.by === by) ?? RANK_CHOICES[0]!;
}

/** What an empty ranking means, so an empty table is not read as "nothing happened". */
export function emptyRankingText(by: RankBy): string {
  if (by === "wait" || by === "waiters")
    return "No waiting was recorded in this window. Waits are seen where a queue is visible (ZooKeeper, Redisson fair locks, databases); plain Redis clients retry unseen.";
  if (by === "no-ttl") return "No lock was held without a TTL in this window.";
  if (by === "takeovers") return "No lock was taken over after its lease ran out in this window.";
  return "No lock activity was recorded in this window.";
}
