/**
 * `npm run bench`: every measurement of BENCHMARKS.md in one run, on loopback only, against servers the bench
 * starts itself (never the machine's Redis on 6379) and stops on every exit path.
 *
 *   npm run bench                         every measurement, about twenty-five minutes
 *   npm run bench -- --only=startup       start-up time and idle RSS, tsx against the compiled dist/ (npm run build)
 *   npm run bench -- --only=discovery,impact
 *   npm run bench -- --only=redlock       Redlock groups (5 nodes, 1,000 locks), poll and track side by side, 30 s
 *   npm run bench -- --update-doc         also rewrites the results section of BENCHMARKS.md
 *
 * Writes bench/results/latest.json (raw numbers) and bench/results/latest.md (the section BENCHMARKS.md embeds).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import * as prettier from "prettier";
import { startRedis } from "../tests/harness/redis";
import { startDashboard, TOKENS } from "../tests/harness/stack";
import { measureAgentMemory } from "./agent-memory";
import { measureChangeDetection } from "./change-detection";
import { measureClientImpact } from "./client-impact";
import { measureDiscovery } from "./discovery-scan";
import { measureEventLatency } from "./event-latency";
import { measureFanout } from "./fanout";
import { measureIngest } from "./ingest";
import { measureLocksTable } from "./locks-table";
import { renderConsole, renderMarkdown, spliceDoc, type RunReport } from "./report";
import { REDIS_SCALE, seedKeyspace, TOTAL_LOCKS } from "./seed-keyspace";
import { holdingHeavyLock } from "./support/heavy-lock";
import { keyspaceNotificationSupport } from "./support/agent-features";
import { Cleanup } from "./support/cleanup";
import { currentLoad, machineFacts } from "./support/machine";
import { killOwnDescendantsSync } from "./support/processes";
import type { SectionResult } from "./support/result";
import { connectViewer } from "./support/ui-socket";
import { measureRedlockTracking } from "./redlock-tracking";
import { measureStartup } from "./startup";
import { measureZookeeper } from "./zookeeper-view";

const root = path.resolve(import.meta.dirname, "..");
/**
 * BENCH_REDIS_KEYS: the keyspace's size instead of 1,000,000 per scale step. The agent's steady-state cost per lock
 * does not depend on the filler, so `BENCH_REDIS_SCALE=10 BENCH_REDIS_KEYS=1000000` measures 100,000 locks in
 * minutes instead of the hour that seeding and parking 10,000,000 keys take.
 */
const TOTAL_KEYS = process.env.BENCH_REDIS_KEYS ? Number(process.env.BENCH_REDIS_KEYS) : 1_000_000 * REDIS_SCALE;
/** The whole run is cut off here whatever state it is in; it normally takes four to five minutes. */
const WATCHDOG_MS = 45 * 60_000;
const SECTIONS = [
  "discovery",
  "impact",
  "events",
  "memory",
  "tracking",
  "zookeeper",
  "ingest",
  "fanout",
  "startup",
  "table",
  "redlock",
] as const;
type SectionId = (typeof SECTIONS)[number];
const TITLES: Record<SectionId, string> = {
  discovery: "Discovery scan",
  impact: "Impact on other clients",
  events: "Event latency",
  memory: "Agent memory",
  tracking: "Change detection: poll vs track",
  zookeeper: "ZooKeeper",
  ingest: "Ingest from many agents",
  fanout: "Several dashboards: a change seen on B",
  startup: "Start-up and idle memory",
  table: "Locks table at 10 k and 100 k locks",
  redlock: "Redlock groups: poll vs track",
};

const started = performance.now();
function log(line: string): void {
  process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
}

/** A wrong command line: reported in one line, without a stack. */
class UsageError extends Error {}

function parseArgs(argv: string[]): { only: Set<SectionId>; updateDoc: boolean } {
  let only = new Set<SectionId>(SECTIONS);
  let updateDoc = false;
  for (const arg of argv) {
    if (arg === "--update-doc") updateDoc = true;
    else if (arg.startsWith("--only=")) {
      const wanted = arg.slice(7).split(",").filter(Boolean);
      if (wanted.length === 0) throw new UsageError(`--only needs one or more of ${SECTIONS.join(",")}`);
      const unknown = wanted.filter((w) => !(SECTIONS as readonly string[]).includes(w));
      if (unknown.length) throw new UsageError(`unknown section ${unknown.join(", ")}; known: ${SECTIONS.join(", ")}`);
      only = new Set(wanted as SectionId[]);
    } else throw new UsageError(`unknown argument ${arg}; use --only=${SECTIONS.join(",")} and/or --update-doc`);
  }
  // The document shows one complete run; a partial one would replace it with "skipped" rows.
  if (updateDoc && only.size !== SECTIONS.length) throw new UsageError("--update-doc needs a full run (no --only)");
  return { only, updateDoc };
}

function skipped(id: SectionId): SectionResult {
  return { id, title: TITLES[id], status: "not-measured", rows: [], notes: ["skipped by --only"], details: {} };
}

/** One section: skipped, measured, or failed with its error; a failure never stops the others. */
async function section(id: SectionId, only: Set<SectionId>, run: () => Promise<SectionResult>): Promise<SectionResult> {
  const base = { id, title: TITLES[id], rows: [], notes: [], details: {} };
  if (!only.has(id)) return skipped(id);
  const t = performance.now();
  log(`--- ${TITLES[id]}`);
  try {
    return { ...(await run()), durationMs: performance.now() - t };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    log(`${TITLES[id]} failed: ${error}`);
    return { ...base, status: "failed", error, durationMs: performance.now() - t };
  }
}

async function main(): Promise<number> {
  const { only, updateDoc } = parseArgs(process.argv.slice(2));
  const machine = machineFacts();
  log(
    `machine: nproc ${machine.nproc}, ${machine.memTotalMb} MB, ${machine.redisServer}, node ${machine.node}, load ${machine.loadStart.toFixed(2)}`,
  );
  let loadMax = machine.loadStart;
  const loadSampler = setInterval(() => (loadMax = Math.max(loadMax, currentLoad())), 5000);
  loadSampler.unref();
  const notifications = keyspaceNotificationSupport();
  const cleanup = new Cleanup();
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping every server the bench started`);
    void cleanup.runAll(log).finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const sections: SectionResult[] = [];
  try {
    const needBig = only.has("discovery") || only.has("impact") || only.has("memory") || only.has("tracking");
    const needStack = only.has("events") || only.has("memory") || only.has("tracking") || only.has("zookeeper");

    const big = needBig ? await startRedis() : null;
    const stopBig = big
      ? cleanup.add(`redis-server (${TOTAL_KEYS.toLocaleString("en")} keys)`, () => big.stop())
      : null;
    if (big) {
      log(`redis-server on 127.0.0.1:${big.port}: populating ${TOTAL_KEYS.toLocaleString("en")} keys`);
      const seed = await holdingHeavyLock("seeding", log, () => seedKeyspace(big.client(), TOTAL_KEYS));
      log(
        `populated in ${(seed.populateMs / 1000).toFixed(1)} s, ${seed.locks} locks in ${(seed.locksMs / 1000).toFixed(1)} s`,
      );
    }
    sections.push(await section("discovery", only, () => measureDiscovery(big!, TOTAL_LOCKS, log)));
    sections.push(await section("impact", only, () => measureClientImpact(big!, TOTAL_LOCKS, log)));

    if (needStack) {
      log("starting the dashboard (API only)");
      // BENCH_DASHBOARD_CPU_PROF=<dir>: a V8 CPU profile of the dashboard, written there when it stops.
      const prof = process.env.BENCH_DASHBOARD_CPU_PROF;
      const dashboard = await startDashboard({
        nodeFlags: prof ? ["--cpu-prof", `--cpu-prof-dir=${prof}`] : [],
      });
      // A dashboard that ends during a long run says how (a signal: something else killed it) and its last words.
      dashboard.process.once("exit", (code, signal) =>
        log(`dashboard exited (code ${code}, signal ${signal}): ${dashboard.output().slice(-3000)}`),
      );
      cleanup.add("dashboard", async () => {
        await dashboard.stop();
        dashboard.cleanup();
      });
      const viewer = await connectViewer(dashboard.url, TOKENS.viewer, log);
      cleanup.add("viewer socket", () => viewer.close());
      const small = only.has("events") ? await startRedis() : null;
      if (small) cleanup.add("redis-server (events)", () => small.stop());
      const ctx = { dashboard, viewer, cleanup };
      sections.push(
        await section("events", only, () => measureEventLatency({ ...ctx, redis: small! }, notifications, log)),
      );
      sections.push(
        await section("memory", only, () =>
          measureAgentMemory({ ...ctx, redis: big! }, notifications, TOTAL_LOCKS, log),
        ),
      );
      sections.push(
        await section("tracking", only, () => measureChangeDetection({ ...ctx, redis: big! }, TOTAL_LOCKS, log)),
      );
      // ZooKeeper's JVM is the largest process of the run: free the big Redis first.
      await stopBig?.();
      sections.push(await section("zookeeper", only, () => measureZookeeper(ctx, log)));
    } else {
      for (const id of ["events", "memory", "tracking", "zookeeper"] as const) sections.push(skipped(id));
    }
    // Its own dashboards (one on SQLite, one on PostgreSQL), after the others have stopped theirs' load.
    sections.push(await section("ingest", only, () => measureIngest({ cleanup }, log)));
    // Two dashboards on one PostgreSQL database and a Redis for the adapter, an agent on A, viewers on A and B.
    sections.push(await section("fanout", only, () => measureFanout({ cleanup }, notifications, log)));
    if (only.has("startup")) {
      const small = await startRedis();
      const stopSmall = cleanup.add("redis-server (startup)", () => small.stop());
      sections.push(await section("startup", only, () => measureStartup(small, log)));
      await stopSmall();
    } else sections.push(skipped("startup"));
    // Its own ten redis-servers and two watchers in this process, side by side.
    sections.push(await section("redlock", only, () => measureRedlockTracking({ cleanup }, log)));
    // Its own redis-server, agents and dashboards with pages, and Chromium: last, with the machine otherwise idle.
    sections.push(await section("table", only, () => measureLocksTable(cleanup, log)));
  } finally {
    log("stopping servers");
    await cleanup.runAll(log);
  }

  clearInterval(loadSampler);
  machine.loadEnd = currentLoad();
  machine.loadMax = Math.max(loadMax, machine.loadEnd);
  const report: RunReport = { machine, durationMs: performance.now() - started, sections };
  process.stdout.write(`${renderConsole(report)}\n`);
  const resultsDir = path.join(root, "bench", "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, "latest.json"), `${JSON.stringify(report, null, 2)}\n`);
  const markdown = renderMarkdown(report);
  writeFileSync(path.join(resultsDir, "latest.md"), `${markdown}\n`);
  log("wrote bench/results/latest.json and bench/results/latest.md");
  if (updateDoc) {
    const docPath = path.join(root, "BENCHMARKS.md");
    const doc = spliceDoc(readFileSync(docPath, "utf8"), markdown);
    if (doc === null) log("BENCHMARKS.md has no results markers: not updated");
    else {
      // Formatted as `prettier --check .` in npm test expects.
      const options = (await prettier.resolveConfig(docPath)) ?? {};
      writeFileSync(docPath, await prettier.format(doc, { ...options, filepath: docPath }));
      log("updated the results section of BENCHMARKS.md");
    }
  }
  return sections.some((s) => s.status === "failed") ? 1 : 0;
}

// Last resort: whatever happens, no redis-server, JVM, dashboard or agent outlives the bench.
process.on("exit", () => {
  for (const what of killOwnDescendantsSync()) process.stderr.write(`[bench] killed leftover process ${what}\n`);
});
const watchdog = setTimeout(() => {
  log(`still running after ${WATCHDOG_MS / 60_000} minutes: giving up`);
  process.exit(2);
}, WATCHDOG_MS);
watchdog.unref();

main()
  .then((code) => process.exit(code))
  .catch((err: unknown) => {
    if (err instanceof UsageError) log(`npm run bench: ${err.message}`);
    else log(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  });
