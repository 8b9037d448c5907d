/**
 * Bench-only, preloaded into the dashboard with NODE_OPTIONS=--import (bench/locks-table.ts): what its memory is
 * made of while the bench runs, without a hook in the product. In the process running lib/server/main.ts only (tsx's
 * launcher loads it too), it appends one JSON line per 200 ms to LOCKSCOPE_MEMORY_PROBE_FILE with
 * process.memoryUsage(); on SIGUSR2 it collects garbage first and writes a line marked `gc: true` (what is live,
 * as opposed to heap V8 had not collected yet). Each line also carries the longest event-loop delay since the line
 * before (`loopMaxMs`, perf_hooks.monitorEventLoopDelay at 5 ms resolution): how long the loop was held.
 */
import { appendFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import v8 from "node:v8";
import vm from "node:vm";

const file = process.env.LOCKSCOPE_MEMORY_PROBE_FILE;
if (file && process.argv.some((a) => a.endsWith("lib/server/main.ts") || a.endsWith("dist/dashboard.mjs"))) {
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const line = (extra) => {
    const loopMaxMs = loop.max / 1e6;
    loop.reset();
    const m = process.memoryUsage();
    const h = v8.getHeapStatistics();
    appendFileSync(
      file,
      JSON.stringify({
        at: Date.now(),
        rss: m.rss,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
        mallocedMemory: h.malloced_memory,
        loopMaxMs,
        ...extra,
      }) + "\n",
    );
  };
  setInterval(() => line({}), 200).unref();
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc");
  process.on("SIGUSR2", () => {
    gc();
    line({ gc: true });
  });
}
