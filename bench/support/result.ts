/** What each measurement hands back to bench/run.ts: table rows for people, details for latest.json. */

export type Verdict = "met" | "missed";

export interface Row {
  /** What was measured, as the table shows it. */
  measure: string;
  /** The formatted result ("2.61 s", "p50 0.21 ms / p99 0.48 ms"). */
  result: string;
  /** The stated target, when the brief has one. */
  target?: string;
  verdict?: Verdict;
}

export interface SectionResult {
  id: string;
  title: string;
  /** measured: rows are from this run; not-measured: a prerequisite is missing; failed: it threw. */
  status: "measured" | "not-measured" | "failed";
  rows: Row[];
  /** What limits the numbers, written from what this run saw. */
  notes: string[];
  /** Raw numbers for latest.json. */
  details: Record<string, unknown>;
  error?: string;
  durationMs?: number;
}

export function verdict(ok: boolean): Verdict {
  return ok ? "met" : "missed";
}
