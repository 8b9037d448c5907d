/**
 * Redlock groups, poll vs track (issue 11): two groups of five real redis-servers each, seeded alike with 1,000
 * node-redlock locks (the same 32-hex token on all five nodes, 20-minute leases), watched side by side in one
 * process by a poll-mode and a track-mode RedlockSource, each polled every POLL_INTERVAL_MS as agent.ts polls.
 * After both show every lock (and the tracked group's nodes all track and have been re-read once), a 30 s quiet
 * window: commands/s and CPU per node from each server's own INFO, and the wall time the agent spent in polls.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { infoNumber, redisCpuSeconds } from "./support/redis-stats";
import { DEFAULT_LOCK_PATTERNS } from "../agent/config";
import { loadRedlockConfig } from "../agent/sources/redlock/redlock-config";
import { createRedlockSources, type RedlockSources } from "../agent/sources/redlock/redlock-factory";
import { startRedis, type RedisServer } from "../tests/harness/redis";
import type { Cleanup } from "./support/cleanup";
import { currentLoad } from "./support/machine";
import type { Row, SectionResult } from "./support/result";
import { sleep } from "./support/stats";

const NODES = 5;
const LOCKS = 1000;
const STEADY_MS = 30_000;
const POLL_INTERVAL_MS = 1000;
const COMMAND_TIMEOUT_MS = 2000;

type Mode = "poll" | "track";

interface Group {
  mode: Mode;
  servers: RedisServer[];
  admins: Redis[];
  watch: RedlockSources;
  pollWallMs: number;
  polls: number;
  stopped: boolean;
  loop: Promise<void>;
  /** Stops the watcher, then the servers (also registered with the run's cleanup, for any other exit). */
  stops: Array<() => Promise<void>>;
}

interface NodeSample {
  commands: number;
  cpuS: number;
}

async function sample(admin: Redis): Promise<NodeSample> {
  const stats = await admin.info("stats");
  return { commands: infoNumber(stats, "total_commands_processed"), cpuS: await redisCpuSeconds(admin) };
}

async function startGroup(mode: Mode, cleanup: Cleanup, log: (l: string) => void): Promise<Group> {
  const servers: RedisServer[] = [];
  const stops: Array<() => Promise<void>> = [];
  for (let i = 0; i < NODES; i++) {
    const s = await startRedis();
    stops.unshift(cleanup.add(`redis-server (redlock ${mode} ${i})`, () => s.stop()));
    servers.push(s);
  }
  const admins = servers.map((s) => s.client());
  // The same token on every node, as node-redlock's acquire writes it.
  for (let start = 0; start < LOCKS; start += 250) {
    await Promise.all(
      admins.map((c) => {
        const p = c.pipeline();
        for (let i = start; i < Math.min(LOCKS, start + 250); i++) {
          p.set(`bench:redlock:lock:${i}`, tokens[i]!, "PX", 20 * 60_000);
        }
        return p.exec();
      }),
    );
  }
  const watch = createRedlockSources(loadRedlockConfig({ REDLOCK_NODES: servers.map((s) => s.url).join(",") }), {
    agentId: `bench-${mode}`,
    newId: randomUUID,
    log: (l) => log(`redlock ${mode}: ${l}`),
    lockPatterns: DEFAULT_LOCK_PATTERNS,
    commandTimeoutMs: COMMAND_TIMEOUT_MS,
    changeDetection: mode,
    push: () => undefined,
  });
  stops.unshift(cleanup.add(`redlock watcher (${mode})`, () => watch.close()));
  await watch.ready;
  const g: Group = {
    mode,
    servers,
    admins,
    watch,
    pollWallMs: 0,
    polls: 0,
    stopped: false,
    loop: Promise.resolve(),
    stops,
  };
  g.loop = (async () => {
    while (!g.stopped) {
      const t = performance.now();
      await watch.sources[0]!.poll();
      g.pollWallMs += performance.now() - t;
      g.polls++;
      await sleep(Math.max(0, POLL_INTERVAL_MS - (performance.now() - t)));
    }
  })();
  return g;
}

const tokens = Array.from({ length: LOCKS }, () => randomBytes(16).toString("hex"));

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

export async function measureRedlockTracking(
  ctx: { cleanup: Cleanup },
  log: (line: string) => void,
): Promise<SectionResult> {
  log(`two Redlock groups of ${NODES} redis-servers, ${LOCKS} locks each`);
  const groups: Record<Mode, Group> = {
    poll: await startGroup("poll", ctx.cleanup, log),
    track: await startGroup("track", ctx.cleanup, log),
  };
  try {
    for (const g of Object.values(groups)) {
      const src = g.watch.sources[0]!;
      await until(`${g.mode}: ${LOCKS} locks`, () => src.locks().length === LOCKS, 120_000);
    }
    const tracked = groups.track.watch.sources[0]!;
    await until("every node of the track group tracked", () => tracked.status().changeDetection === "track", 30_000);
    // Two more polls: the resync after tracking came up is behind us.
    const after = groups.track.polls + 2;
    await until("two polls after tracking", () => groups.track.polls >= after, 30_000);

    const loadStart = currentLoad();
    let loadMax = loadStart;
    const before = {
      poll: await Promise.all(groups.poll.admins.map(sample)),
      track: await Promise.all(groups.track.admins.map(sample)),
    };
    const wallBefore = { poll: groups.poll.pollWallMs, track: groups.track.pollWallMs };
    const pollsBefore = { poll: groups.poll.polls, track: groups.track.polls };
    const cpuBefore = process.cpuUsage();
    const t0 = performance.now();
    log(`steady state: ${STEADY_MS / 1000} s, both groups polled every ${POLL_INTERVAL_MS} ms`);
    const end = t0 + STEADY_MS;
    while (performance.now() < end) {
      await sleep(Math.min(5000, end - performance.now()));
      loadMax = Math.max(loadMax, currentLoad());
    }
    const wallS = (performance.now() - t0) / 1000;
    const cpuAfter = process.cpuUsage(cpuBefore);
    const afterS = {
      poll: await Promise.all(groups.poll.admins.map(sample)),
      track: await Promise.all(groups.track.admins.map(sample)),
    };
    const loadEnd = currentLoad();
    loadMax = Math.max(loadMax, loadEnd);

    const per = (mode: Mode) =>
      afterS[mode].map((a, i) => {
        const b = before[mode][i]!;
        // Less the window's own two INFO calls on each side.
        return { cps: (a.commands - b.commands - 2) / wallS, cpuPct: ((a.cpuS - b.cpuS) / wallS) * 100 };
      });
    const poll = per("poll");
    const track = per("track");
    const fmt = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(" / ");
    const pollWall = (mode: Mode) =>
      ((groups[mode].pollWallMs - wallBefore[mode]) / (groups[mode].polls - pollsBefore[mode])).toFixed(1);
    const rows: Row[] = [
      {
        measure: `commands/s per node (nodes 1-5), ${LOCKS} quiet locks, poll`,
        result: fmt(
          poll.map((x) => x.cps),
          0,
        ),
      },
      {
        measure: `commands/s per node (nodes 1-5), ${LOCKS} quiet locks, track`,
        result: fmt(
          track.map((x) => x.cps),
          0,
        ),
      },
      {
        measure: "Redis CPU per node, (used_cpu_user+sys) delta / wall, poll",
        result: `${fmt(
          poll.map((x) => x.cpuPct),
          2,
        )} % of a core`,
      },
      {
        measure: "Redis CPU per node, (used_cpu_user+sys) delta / wall, track",
        result: `${fmt(
          track.map((x) => x.cpuPct),
          2,
        )} % of a core`,
      },
      {
        measure: "wall time of one group poll, poll / track",
        result: `${pollWall("poll")} ms / ${pollWall("track")} ms`,
      },
      {
        measure: "bench process CPU (both watchers together)",
        result: `${(((cpuAfter.user + cpuAfter.system) / 1e6 / wallS) * 100).toFixed(1)}% of a core`,
      },
    ];
    const notes = [
      `1-minute load average ${loadStart.toFixed(2)} at the window's start, ${loadMax.toFixed(2)} highest, ${loadEnd.toFixed(2)} at its end.`,
      `Both groups run at once in one process (the bench's), so the process CPU row covers both watchers; per-node figures are each server's own INFO deltas over ${wallS.toFixed(1)} s.`,
      "In track mode what is left per node and poll is TIME, the SCAN step(s) that keep discovery going (COUNT 1000 over the node's 1,000 keys), and the safety sweep (each lock once a minute: about 17 locks/s × TYPE, PTTL, STRLEN, GETRANGE).",
    ];
    return {
      id: "redlock",
      title: "Redlock groups: poll vs track",
      status: "measured",
      rows,
      notes,
      details: { poll, track, wallS, loadStart, loadMax, loadEnd, cpuAfter },
    };
  } finally {
    for (const g of Object.values(groups)) g.stopped = true;
    await Promise.all(Object.values(groups).map((g) => g.loop));
    for (const g of Object.values(groups)) for (const stop of g.stops) await stop();
  }
}
