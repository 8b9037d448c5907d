/**
 * How far V8 lets the heap of the dashboard and of the agent grow past what the last full collection left live. By default V8 picks a
 * factor between 1.1 and 4 from how fast it collects, and on a machine with memory to spare it lets the heap reach
 * twice the live size and more before it collects again: at 100,000 locks the ingest of the agent's first reads
 * (about 100 MB live) and the API and page requests after it took the dashboard past 500 MB of RSS, the heap 3 times
 * what was live. 20 % (V8 uses 30 % when it optimizes for memory) costs more frequent full collections, of a heap
 * that is then mostly the live state. The agent asks for 50 % (agent/node-flags.ts: its full collections cost more
 * CPU than the memory they saved).
 */
import { setFlagsFromString } from "node:v8";

export const HEAP_GROWING_PERCENT = 20;

/** The V8 flag to set, or null when the process was started with its own (`node --heap-growing-percent=…`). */
export function heapGrowthFlag(execArgv: readonly string[], percent = HEAP_GROWING_PERCENT): string | null {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return null;
  return `--heap-growing-percent=${percent}`;
}

/**
 * Sets the flag at start. V8 reads it at each full collection (heap-controller), so setting it at run time, before
 * the live state fills, has the same effect as the command-line flag; NODE_OPTIONS does not accept it.
 */
export function limitHeapGrowth(
  percent = HEAP_GROWING_PERCENT,
  execArgv: readonly string[] = process.execArgv,
): string | null {
  const flag = heapGrowthFlag(execArgv, percent);
  if (flag) setFlagsFromString(flag);
  return flag;
}
