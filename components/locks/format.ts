/** Formatting shared by the lock panels. */

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return "—";
  const neg = ms < 0;
  let s = Math.abs(ms) / 1000;
  let out: string;
  if (s < 10) out = `${s.toFixed(1)}s`;
  else if (s < 60) out = `${Math.floor(s)}s`;
  else if (s < 3600) out = `${Math.floor(s / 60)}m ${Math.floor(s % 60)}s`;
  else if (s < 86_400) out = `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  else {
    s = s / 86_400;
    out = `${Math.floor(s)}d ${Math.floor((s % 1) * 24)}h`;
  }
  return neg ? `-${out}` : out;
}

/** Remaining lease now, from the value at receipt and the browser's clock; null = never expires. */
export function remainingTtl(ttlMs: number | null, receivedAt: number, now: number): number | null {
  if (ttlMs === null) return null;
  return Math.max(0, ttlMs - (now - receivedAt));
}

export function shorten(text: string | null, max = 24): string {
  if (text === null) return "—";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export const SEVERITY_CLASS = {
  critical: "bg-rose-500/15 text-rose-300 ring-rose-500/40",
  warning: "bg-amber-500/15 text-amber-300 ring-amber-500/40",
  info: "bg-sky-500/15 text-sky-300 ring-sky-500/40",
} as const;
