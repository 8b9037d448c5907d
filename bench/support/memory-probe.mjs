/**
 * Bench-only, preloaded into the dashboard with NODE_OPTIONS=--import (bench/locks-table.ts): what its memory is
 * made of while the bench runs, without a hook in the product. In the process running lib/server/main.ts only (tsx's
 * launcher loads it too), it appends one JSON line per 200 ms to LOCKSCOPE_MEMORY_PROBE_FILE with
 * process.memoryUsage(); on SIGUSR2 it collects garbage first and writes a line marked `gc: true` (what is live,
 * as opposed to heap V8 had not collected yet). Each line also carries the longest event-loop delay since the line
 * before (`loopMaxMs`, perf_hooks.monitorEventLoopDelay at 5 ms resolution): how long the loop was held; and the
 * garbage collections that ended since then (`gcMaxMs` the longest, `gcMs` their sum, `gcMajor` how many were
 * mark-compacts), from the `gc` performance entries: whether a held loop was the collector.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";
import vm from "node:vm";

const file = process.env.LOCKSCOPE_MEMORY_PROBE_FILE;
if (file && process.argv.some((a) => a.endsWith("lib/server/main.ts") || a.endsWith("dist/dashboard.mjs"))) {
  // Experiments only: V8 flags to try on the dashboard without changing it (BENCH_TABLE_V8_FLAGS in the bench).
  if (process.env.LOCKSCOPE_PROBE_V8_FLAGS) v8.setFlagsFromString(process.env.LOCKSCOPE_PROBE_V8_FLAGS);
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let gcs = { max: 0, sum: 0, major: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcs.max = Math.max(gcs.max, e.duration);
      gcs.sum += e.duration;
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gcs.major++;
    }
  }).observe({ entryTypes: ["gc"] });
  const line = (extra) => {
    const loopMaxMs = loop.max / 1e6;
    loop.reset();
    const gc = gcs;
    gcs = { max: 0, sum: 0, major: 0 };
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
        gcMaxMs: gc.max,
        gcMs: gc.sum,
        gcMajor: gc.major,
        ...extra,
      }) + "\n",
    );
  };
  setInterval(() => line({}), 200).unref();
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc");
  // Experiments only: LOCKSCOPE_PROBE_CPU_PROFILE=<prefix> profiles the CPU, one file per stage (on each SIGUSR2).
  const profilePrefix = process.env.LOCKSCOPE_PROBE_CPU_PROFILE;
  const session = profilePrefix ? new Session() : null;
  let profiles = 0;
  if (session) {
    session.connect();
    session.post("Profiler.setSamplingInterval", { interval: 500 });
    session.post("Profiler.enable");
    session.post("Profiler.start");
  }
  process.on("SIGUSR2", () => {
    if (session) {
      session.post("Profiler.stop", (err, r) => {
        if (!err) writeFileSync(`${profilePrefix}.${profiles++}.cpuprofile`, JSON.stringify(r.profile));
        session.post("Profiler.start");
      });
    }
    gc();
    // Written a turn later: the loop delay of the forced collection itself then lands in this line (which the bench
    // leaves out of its stages), not in the next stage's first line.
    setTimeout(() => line({ gc: true }), 20);
  });
}
