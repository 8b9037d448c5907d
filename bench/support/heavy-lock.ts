/**
 * BENCH_HEAVY_LOCK: the path of a flock(1) lock file that the machine's heavy jobs share. When it is set the bench
 * holds the lock only while it measures (seeding, baselines, steady-state windows, operations) and not while it
 * waits for a long paced discovery, so half an hour of waiting at 10,000,000 keys keeps nobody's test run waiting,
 * and no test run overlaps a measurement window. Do not also run the bench under `flock` of the same file: it would
 * wait for itself.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";

export async function holdingHeavyLock<T>(what: string, log: (line: string) => void, fn: () => Promise<T>): Promise<T> {
  const path = process.env.BENCH_HEAVY_LOCK;
  if (!path) return fn();
  const t0 = performance.now();
  // flock holds the lock while `cat` runs; closing its stdin ends it and frees the lock.
  const child = spawn("flock", [path, "sh", "-c", "echo held; exec cat >/dev/null"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once("data", () => resolve());
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`flock ${path} exited with ${code} before holding the lock`)));
  });
  const waited = (performance.now() - t0) / 1000;
  if (waited > 1) log(`${what}: waited ${waited.toFixed(0)} s for ${path}`);
  try {
    return await fn();
  } finally {
    const exited = once(child, "exit");
    child.stdin.end();
    await exited;
  }
}
