/**
 * What a paced SCAN step costs the server, by size: the same keys a second walked as COUNT 250 steps 20 times a
 * second and as COUNT 1000 steps 5 times a second (the agent's MATCH glob, one step in flight, as the paced pass
 * sends them), in alternating 10 s windows (small, large, large, small) after a window with no client, R rounds,
 * on one real redis-server with 1,000,000 keys. Per window: the server's CPU (used_cpu_user + used_cpu_sys delta),
 * its own account of the steps (cmdstat_scan usec) and the time per step. What the CPU has beyond the account and
 * the idle window is the round trip's cost outside the command (reading the request, writing the reply, waking up).
 *
 *   flock /tmp/lockscope-heavy.lock npx tsx bench/scan-step-cost.ts [--rounds=3]
 */
import { startRedis } from "../tests/harness/redis";
import { currentLoad } from "./support/machine";
import { readServerTime, redisCpuSeconds } from "./support/redis-stats";
import { sleep } from "./support/stats";

const rounds = Number(process.argv.find((a) => a.startsWith("--rounds="))?.split("=")[1] ?? 3);
const WINDOW_MS = 10_000;
const KEYS_PER_SEC = 5000;
/** The agent's SCAN MATCH glob for the default LOCK_PATTERNS (README). */
const MATCH = "*[lLmMsS][oOuUeE][cCtTmM][kKeEaA]*";

async function main(): Promise<void> {
  const redis = await startRedis();
  const admin = redis.client();
  const scanner = redis.client();
  try {
    await admin.call("DEBUG", "POPULATE", "1000000", "key", "16");
    let cursor = "0";
    const window = async (count: number | null) => {
      const c0 = await redisCpuSeconds(admin);
      const s0 = await readServerTime(admin);
      const t0 = performance.now();
      if (count === null) await sleep(WINDOW_MS);
      else {
        const gapMs = (1000 * count) / KEYS_PER_SEC;
        let next = t0;
        while (performance.now() - t0 < WINDOW_MS) {
          cursor = ((await scanner.scan(cursor, "MATCH", MATCH, "COUNT", count)) as [string, string[]])[0];
          next += gapMs;
          const wait = next - performance.now();
          if (wait > 0) await sleep(wait);
        }
      }
      const wall = (performance.now() - t0) / 1000;
      const s1 = await readServerTime(admin);
      const calls = s1.scanCalls - s0.scanCalls;
      return {
        count,
        cpuPct: (((await redisCpuSeconds(admin)) - c0) / wall) * 100,
        commandPct: ((s1.scanUsec - s0.scanUsec) / 1e6 / wall) * 100,
        calls,
        usecPerStep: calls > 0 ? (s1.scanUsec - s0.scanUsec) / calls : null,
      };
    };
    const out: Array<Awaited<ReturnType<typeof window>> & { round: number; idlePct: number }> = [];
    for (let round = 1; round <= rounds; round++) {
      const idle = await window(null);
      for (const count of [250, 1000, 1000, 250]) out.push({ ...(await window(count)), round, idlePct: idle.cpuPct });
    }
    for (const count of [250, 1000]) {
      const ws = out.filter((w) => w.count === count);
      // Beyond the server's account and its idle work, per step: the round trip outside the command.
      const outside = ws.map(
        (w) => ((w.cpuPct - w.commandPct - w.idlePct) / 100 / (w.calls / (WINDOW_MS / 1000))) * 1e6,
      );
      const fmt = (xs: number[], d = 2) => `${Math.min(...xs).toFixed(d)} to ${Math.max(...xs).toFixed(d)}`;
      console.log(
        `COUNT ${count}, ${KEYS_PER_SEC / count} steps/s: server CPU ${fmt(ws.map((w) => w.cpuPct))}%, its account of SCAN ${fmt(ws.map((w) => w.commandPct))}%, ${fmt(
          ws.map((w) => w.usecPerStep ?? NaN),
          0,
        )} µs a step, ${fmt(outside, 0)} µs a step outside the command`,
      );
    }
    console.log(
      `idle ${out
        .map((w) => w.idlePct.toFixed(3))
        .filter((v, i, a) => a.indexOf(v) === i)
        .join(", ")}%; load ${currentLoad().toFixed(2)}`,
    );
  } finally {
    admin.disconnect();
    scanner.disconnect();
    await redis.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
