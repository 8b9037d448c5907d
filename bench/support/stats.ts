/** Percentiles and formatting; pure. */

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  /** The 99.9th percentile: where a rare stall (one command behind a long one) shows before the p99 moves. */
  p999: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(values: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
  };
}

export function median(values: readonly number[]): number {
  return percentile(Float64Array.from(values).sort(), 50);
}

export function ms(v: number, digits = 0): string {
  return Number.isFinite(v) ? `${v.toFixed(digits)} ms` : "n/a";
}

export function seconds(msValue: number): string {
  return Number.isFinite(msValue) ? `${(msValue / 1000).toFixed(2)} s` : "n/a";
}

export function ratio(a: number, b: number): number {
  return b > 0 ? a / b : Number.NaN;
}

export function times(r: number): string {
  return Number.isFinite(r) ? `${r.toFixed(2)}×` : "n/a";
}

export function mb(kb: number | null): string {
  return kb === null ? "n/a" : `${(kb / 1024).toFixed(0)} MB`;
}

/** "p50 0.21 ms / p99 0.48 ms" */
export function p50p99(s: Pick<Summary, "p50" | "p99">, digits = 2): string {
  return `p50 ${ms(s.p50, digits)} / p99 ${ms(s.p99, digits)}`;
}

/** Epoch ms with sub-millisecond resolution: comparable between processes on one machine (unlike performance.now()). */
export const epochMs = (): number => performance.timeOrigin + performance.now();

export const sleep = (msValue: number): Promise<void> => new Promise((r) => setTimeout(r, msValue));
