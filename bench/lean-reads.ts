/**
 * The bulk reads' two paths side by side on one real redis-server: the agent's port re-reading N string locks
 * (PTTL and GETRANGE each, 250 keys a batch, as the safety sweep does) through ioredis pipelines and through the
 * lean connection (agent/sources/redis/lean-connection.ts), both tracked with CLIENT TRACKING as in track mode,
 * alternating, R rounds. Per round: wall time, the server's CPU (used_cpu_user + used_cpu_sys delta) and this
 * process's CPU.
 *
 *   flock /tmp/lockscope-heavy.lock npx tsx bench/lean-reads.ts [--keys=100000] [--rounds=4]
 */
import { Redis } from "ioredis";
import { startRedis } from "../tests/harness/redis";
import { LeanCompanion } from "../agent/sources/redis/lean-connection";
import { IoredisLockPort } from "../agent/sources/redis/redis-client";
import { currentLoad } from "./support/machine";
import { median } from "./support/stats";
import { redisCpuSeconds } from "./support/redis-stats";

function arg(name: string, fallback: number): number {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? Number(hit.split("=")[1]) : fallback;
}

const N = arg("keys", 100_000);
const ROUNDS = arg("rounds", 4);
const BATCH = 250;

async function main(): Promise<void> {
  const redis = await startRedis();
  const admin = redis.client();
  try {
    await admin.call("DEBUG", "POPULATE", N, "lock", 20);
    const invalidations = redis.client();
    const redirect = String(await invalidations.call("CLIENT", "ID"));
    await invalidations.subscribe("__redis__:invalidate");
    const reader = new Redis({ port: redis.port, host: "127.0.0.1", commandTimeout: 5000 });
    await reader.call("CLIENT", "TRACKING", "ON", "REDIRECT", redirect);
    const lean = new LeanCompanion(reader, { tracked: true, commandTimeoutMs: 5000 });
    if (!(await lean.track(redirect))) throw new Error("the lean connection did not open");
    const paths = [
      ["ioredis pipelines", new IoredisLockPort(reader)],
      ["lean connection", new IoredisLockPort(reader, lean)],
    ] as const;
    const keys = Array.from({ length: N }, (_, i) => Buffer.from(`lock:${i}`));
    const types = keys.map(() => "string");
    const results = new Map<string, Array<{ wall: number; server: number; agent: number }>>();
    const loads: number[] = [currentLoad()];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, port] of round % 2 === 0 ? paths : [...paths].reverse()) {
        const server0 = 1000 * (await redisCpuSeconds(admin));
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        for (let s = 0; s < N; s += BATCH) {
          const got = await port.resample!(keys.slice(s, s + BATCH), types.slice(s, s + BATCH), 256);
          if (got.some((g) => g === null)) throw new Error(`${name}: a read did not see a whole value`);
        }
        const wall = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        const server = 1000 * (await redisCpuSeconds(admin)) - server0;
        const row = { wall, server, agent: (cpu.user + cpu.system) / 1000 };
        results.set(name, [...(results.get(name) ?? []), row]);
        console.log(
          `round ${round + 1} ${name}: wall ${row.wall.toFixed(0)} ms, server CPU ${row.server.toFixed(0)} ms, this process ${row.agent.toFixed(0)} ms`,
        );
      }
      loads.push(currentLoad());
    }
    console.log(
      `\n${N} keys re-read (PTTL + GETRANGE each, ${BATCH} a batch, tracked), ${ROUNDS} rounds; 1-min load ${loads.join(" ")}`,
    );
    for (const [name, rows] of results) {
      const m = (f: (r: (typeof rows)[number]) => number) => median(rows.map(f)).toFixed(0);
      const range = (f: (r: (typeof rows)[number]) => number) =>
        `${Math.min(...rows.map(f)).toFixed(0)}–${Math.max(...rows.map(f)).toFixed(0)}`;
      console.log(
        `${name}: median wall ${m((r) => r.wall)} ms, server CPU ${m((r) => r.server)} ms (${range((r) => r.server)}), this process ${m((r) => r.agent)} ms (${range((r) => r.agent)})`,
      );
    }
    lean.close();
    reader.disconnect();
  } finally {
    await redis.stop();
  }
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
