/** Colour per state, shared by the Redlock page, the lock detail and the locks table: one meaning per colour. */
import type { QuorumState } from "@/lib/contract/lock";
import type { NodeHealth, RowSeverity, VoteRole } from "./redlock-model";

export const STATE_CLASS: Record<QuorumState, string> = {
  held: "bg-emerald-500/15 text-emerald-300 ring-emerald-500/40",
  "at-risk": "bg-amber-500/15 text-amber-300 ring-amber-500/50",
  minority: "bg-orange-500/15 text-orange-300 ring-orange-500/40",
  expired: "bg-slate-600/30 text-slate-300 ring-slate-500/40",
  split: "bg-rose-500/20 text-rose-200 ring-rose-500/60",
  "quorum-lost": "bg-rose-600 text-white ring-rose-400",
};

export const HEALTH_CLASS: Record<NodeHealth, string> = {
  up: "bg-emerald-500/15 text-emerald-300 ring-emerald-500/40",
  slow: "bg-amber-500/15 text-amber-300 ring-amber-500/50",
  down: "bg-rose-500/20 text-rose-200 ring-rose-500/60",
};

export const HEALTH_DOT: Record<NodeHealth, string> = {
  up: "bg-emerald-400",
  slow: "bg-amber-400",
  down: "bg-rose-500",
};

export const ROW_CLASS: Record<RowSeverity, string> = {
  critical: "bg-rose-950/40",
  warning: "bg-amber-950/20",
  info: "",
  none: "",
};

/** The left edge of a row's first cell: hazards stand out even when scrolled sideways past the state column. */
export const EDGE_CLASS: Record<RowSeverity, string> = {
  critical: "border-l-4 border-l-rose-500",
  warning: "border-l-4 border-l-amber-400",
  info: "border-l-4 border-l-transparent",
  none: "border-l-4 border-l-transparent",
};

export const VOTE_TEXT: Record<VoteRole, string> = {
  winner: "text-sky-300",
  rival: "text-fuchsia-300",
  none: "text-slate-400",
};

export const VOTE_BAR: Record<VoteRole, string> = {
  winner: "bg-sky-400",
  rival: "bg-fuchsia-400",
  none: "bg-slate-600",
};
