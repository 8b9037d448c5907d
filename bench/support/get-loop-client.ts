/** Drives bench/get-loop.ts: start it, wait for "ready", stop it, read its samples back. */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { summarize, type Summary } from "./stats";

const root = path.resolve(import.meta.dirname, "..", "..");
const tsx = path.join(root, "node_modules", ".bin", "tsx");

export interface GetSamples {
  /** Interleaved [start epoch ms, latency ms]. */
  pairs: Float64Array;
  /** Latencies of the GETs that started inside any of the windows (epoch ms). */
  windows(spans: ReadonlyArray<{ from: number; to: number }>): Summary;
}

export interface GetLoop {
  pid: number;
  stop(): Promise<GetSamples>;
}

export async function startGetLoop(port: number, key: string, maxMs: number): Promise<GetLoop> {
  const dir = mkdtempSync(path.join(tmpdir(), "lockscope-bench-get-"));
  const outFile = path.join(dir, "samples.f64");
  const child = spawn(tsx, [path.join(root, "bench", "get-loop.ts"), String(port), key, String(maxMs), outFile], {
    cwd: root,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`get-loop not ready within 20 s: ${err}`)), 20_000);
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("ready\n")) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`get-loop exited (${code}) before ready: ${err}`));
      });
    });
  } catch (e) {
    kill();
    throw e;
  }
  return {
    pid: child.pid!,
    async stop() {
      try {
        child.stdin.end();
        const code = await Promise.race([
          exited,
          new Promise<"timeout">((r) => setTimeout(() => r("timeout"), maxMs + 15_000)),
        ]);
        if (code !== 0) throw new Error(`get-loop ended with ${code}: ${err}`);
        const buf = readFileSync(outFile);
        const pairs = new Float64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
        return {
          pairs,
          windows(spans) {
            const lat: number[] = [];
            for (let i = 0; i < pairs.length; i += 2) {
              const t = pairs[i]!;
              if (spans.some((s) => t >= s.from && t <= s.to)) lat.push(pairs[i + 1]!);
            }
            return summarize(lat);
          },
        };
      } finally {
        kill();
      }
    },
  };
}

/** Runs `during` while the GET loop runs; the loop is stopped (and its files removed) whatever happens. */
export async function withGetLoop<T>(
  port: number,
  key: string,
  maxMs: number,
  during: () => Promise<T>,
): Promise<{ samples: GetSamples; result: T }> {
  const loop = await startGetLoop(port, key, maxMs);
  let result: T;
  try {
    result = await during();
  } catch (err) {
    await loop.stop().catch(() => undefined);
    throw err;
  }
  return { samples: await loop.stop(), result };
}
