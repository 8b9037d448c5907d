/**
 * "Another client" of the measured Redis, as its own process so that the agent's JavaScript never delays its
 * timing: a tight loop of single GETs, each timed, until stdin closes or the time limit passes.
 *
 * Usage: tsx bench/get-loop.ts <port> <key> <maxMs> <outFile>
 * Prints "ready" once connected and warmed up; at the end writes the samples to outFile as Float64 pairs
 * [start epoch ms, latency ms] and prints one JSON line {"samples": n}.
 */
import { writeFileSync } from "node:fs";
import { Redis } from "ioredis";

const MAX_SAMPLES = 1_500_000;
const WARM_UP = 500;

async function main(): Promise<void> {
  const [portText, key, maxMsText, outFile] = process.argv.slice(2);
  if (!portText || !key || !maxMsText || !outFile) throw new Error("usage: get-loop.ts <port> <key> <maxMs> <outFile>");
  const client = new Redis({ host: "127.0.0.1", port: Number(portText), maxRetriesPerRequest: 1, lazyConnect: true });
  await client.connect();
  for (let i = 0; i < WARM_UP; i++) await client.get(key);

  let stop = false;
  process.stdin.on("end", () => (stop = true));
  process.stdin.on("close", () => (stop = true));
  process.stdin.resume();
  const samples = new Float64Array(MAX_SAMPLES * 2);
  const origin = performance.timeOrigin;
  const deadline = performance.now() + Number(maxMsText);
  process.stdout.write("ready\n");

  let n = 0;
  while (!stop && n < MAX_SAMPLES) {
    const t0 = performance.now();
    if (t0 > deadline) break;
    await client.get(key);
    samples[2 * n] = origin + t0;
    samples[2 * n + 1] = performance.now() - t0;
    n++;
  }
  client.disconnect();
  writeFileSync(outFile, Buffer.from(samples.buffer, 0, n * 16));
  process.stdout.write(`${JSON.stringify({ samples: n })}\n`);
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`get-loop: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
