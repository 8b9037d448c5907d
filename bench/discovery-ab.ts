/**
 * Full discovery, this tree against a baseline commit, side by side on the same server and data in one run:
 * the raw SCAN COUNT 1000 loop, the baseline's agent and this tree's agent, alternating, REPEATS times.
 *
 *   flock /tmp/lockscope-heavy.lock npx tsx bench/discovery-ab.ts [--base=main] [--repeats=5] [--cpu-prof]
 *
 * Each side is bench/support/in-process-agent.ts of its tree bundled with esbuild (as scripts/bundle.ts bundles
 * the agent: npm packages external) into bench/results/ab/, so both run compiled in this process, the real
 * RedisSource over the real ioredis port. The baseline's tree comes from `git archive <base>`.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Session } from "node:inspector/promises";
import { build } from "esbuild";
import type { Redis } from "ioredis";
import { startRedis } from "../tests/harness/redis";
import { seedKeyspace, TOTAL_LOCKS } from "./seed-keyspace";
import { rawScanLoop } from "./discovery-scan";
import type { DiscoveryRun } from "./support/in-process-agent";
import { median, ratio } from "./support/stats";

const root = path.resolve(import.meta.dirname, "..");
const out = path.join(root, "bench", "results", "ab");
const TOTAL_KEYS = 1_000_000;
const TIMEOUT_MS = 30_000;

type FullDiscovery = (
  url: string,
  opts: { visitBudgetPerPoll: number; scanCount: number; expected: number; timeoutMs: number },
) => Promise<DiscoveryRun>;

function arg(name: string, fallback: string): string {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? hit.slice(name.length + 3) : fallback;
}

/** Bundles `<tree>/bench/support/in-process-agent.ts` into out/<name>/ (with the Lua scripts it loads at start). */
async function bundle(tree: string, name: string): Promise<FullDiscovery> {
  const dir = path.join(out, name);
  await build({
    entryPoints: [path.join(tree, "bench", "support", "in-process-agent.ts")],
    outfile: path.join(dir, "in-process-agent.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "warning",
  });
  cpSync(path.join(tree, "agent", "sources", "redis", "lua"), path.join(dir, "lua"), { recursive: true });
  const mod = (await import(path.join(dir, "in-process-agent.mjs"))) as { fullDiscovery: FullDiscovery };
  return mod.fullDiscovery;
}

function load(): string {
  return execFileSync("cat", ["/proc/loadavg"]).toString().split(" ")[0]!;
}

async function main(): Promise<void> {
  const base = arg("base", "main");
  const repeats = Number(arg("repeats", "5"));
  const profile = process.argv.includes("--cpu-prof");
  const baseSha = execFileSync("git", ["rev-parse", "--short", base], { cwd: root }).toString().trim();
  const headSha = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
  const dirty = execFileSync("git", ["status", "--porcelain", "agent", "bench"], { cwd: root }).toString().trim();
  rmSync(out, { recursive: true, force: true });
  // Outside the checkout, so that neither tsc nor eslint sees a second copy of the sources.
  const baseTree = mkdtempSync(path.join(tmpdir(), `lockscope-ab-${baseSha}-`));
  execFileSync("sh", ["-c", `git archive ${baseSha} | tar -x -C ${baseTree}`], { cwd: root });
  const baseRun = await bundle(baseTree, "base");
  rmSync(baseTree, { recursive: true, force: true });
  const sides: Array<{ name: string; run: FullDiscovery; ms: number[]; passMs: number[]; cpuMs: number[] }> = [
    { name: `base ${base} (${baseSha})`, run: baseRun, ms: [], passMs: [], cpuMs: [] },
    {
      name: `this tree (${headSha}${dirty ? ", uncommitted changes" : ""})`,
      run: await bundle(root, "head"),
      ms: [],
      passMs: [],
      cpuMs: [],
    },
  ];
  const loads = [load()];
  const started = new Date().toISOString();
  const redis = await startRedis();
  try {
    const seed = await seedKeyspace(redis.client(), TOTAL_KEYS);
    process.stdout.write(`seeded ${seed.dbsize} keys, ${seed.locks} locks; load ${loads[0]}\n`);
    const scanner: Redis = redis.client();
    const loops: number[] = [];
    const loopsCpu: number[] = [];
    const session = profile ? new Session() : null;
    if (session) {
      session.connect();
      await session.post("Profiler.enable");
    }
    for (let i = 0; i < repeats; i++) {
      const loopCpu0 = process.cpuUsage();
      loops.push((await rawScanLoop(scanner, 1000)).wallMs);
      const loopCpu = process.cpuUsage(loopCpu0);
      loopsCpu.push((loopCpu.user + loopCpu.system) / 1000);
      // Alternate which side goes first, so that drift hits both alike.
      const order = i % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        if (session) await session.post("Profiler.start");
        const cpu0 = process.cpuUsage();
        const run = await side.run(redis.url, {
          visitBudgetPerPoll: 0,
          scanCount: 1000,
          expected: TOTAL_LOCKS,
          timeoutMs: TIMEOUT_MS,
        });
        const cpu = process.cpuUsage(cpu0);
        side.cpuMs.push((cpu.user + cpu.system) / 1000);
        if (session) {
          const { profile: p } = await session.post("Profiler.stop");
          writeFileSync(path.join(out, `${side === sides[0] ? "base" : "head"}-${i}.cpuprofile`), JSON.stringify(p));
        }
        if (!run.completed) throw new Error(`${side.name}: incomplete, ${run.tracked} locks`);
        side.ms.push(run.wallMs);
        side.passMs.push(run.passMs ?? Number.NaN);
      }
      loads.push(load());
      process.stdout.write(
        `run ${i + 1}/${repeats}: raw ${loops[i]!.toFixed(0)} ms (CPU ${loopsCpu[i]!.toFixed(0)}); ${sides.map((s) => `${s.name} ${s.ms[i]!.toFixed(0)} ms (pass ${s.passMs[i]!.toFixed(0)}, CPU ${s.cpuMs[i]!.toFixed(0)})`).join("; ")}; load ${loads.at(-1)}\n`,
      );
    }
    const loopMs = median(loops);
    process.stdout.write(`\n${started} .. ${new Date().toISOString()}, 1-min load ${loads.join(" ")}\n`);
    process.stdout.write(
      `raw SCAN COUNT 1000 loop: median ${loopMs.toFixed(0)} ms, this process's CPU ${median(loopsCpu).toFixed(0)} ms [${loops.map((x) => x.toFixed(0)).join(", ")}]\n`,
    );
    for (const s of sides) {
      const perRun = s.ms.map((m, i) => ratio(m, loops[i]!).toFixed(2));
      process.stdout.write(
        `${s.name}: median ${median(s.ms).toFixed(0)} ms, pass ${median(s.passMs).toFixed(0)} ms, this process's CPU ${median(s.cpuMs).toFixed(0)} ms; ratio of medians ${ratio(median(s.ms), loopMs).toFixed(2)}×, per run [${perRun.join(", ")}] [${s.ms.map((x) => x.toFixed(0)).join(", ")}]\n`,
      );
    }
  } finally {
    await redis.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`discovery-ab: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
