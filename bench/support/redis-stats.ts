/** Redis's own accounting of the time it spent per command: the floor a client-side scan cannot beat. */
import type { Redis } from "ioredis";

export interface CommandStat {
  calls: number;
  usec: number;
}

/**
 * Sample of INFO commandstats (Redis 7.0):
 *   # Commandstats
 *   cmdstat_scan:calls=1001,usec=812345,usec_per_call=811.53,rejected_calls=0,failed_calls=0
 *   cmdstat_type:calls=10000,usec=4567,usec_per_call=0.46,rejected_calls=0,failed_calls=0
 */
export function parseCommandStats(info: string): Map<string, CommandStat> {
  const out = new Map<string, CommandStat>();
  for (const line of info.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
}

export interface ServerTime {
  scanCalls: number;
  scanUsec: number;
  /** Every command except the bench's own INFO and CONFIG. */
  allUsec: number;
}

/** One numeric field of an INFO section (`used_cpu_user:1.234567`); NaN when the server does not print it. */
export function infoNumber(info: string, field: string): number {
  const m = new RegExp(`^${field}:([0-9.]+)`, "m").exec(info);
  return m ? Number(m[1]) : Number.NaN;
}

/** The server's own CPU so far (used_cpu_user + used_cpu_sys), in seconds: deltas of it are its CPU share. */
export async function redisCpuSeconds(admin: Redis): Promise<number> {
  const info = await admin.info("cpu");
  return infoNumber(info, "used_cpu_user") + infoNumber(info, "used_cpu_sys");
}

export async function resetStats(admin: Redis): Promise<void> {
  await admin.config("RESETSTAT");
}

export async function readServerTime(admin: Redis): Promise<ServerTime> {
  const stats = parseCommandStats(await admin.info("commandstats"));
  let allUsec = 0;
  for (const [name, s] of stats) if (!name.startsWith("info") && !name.startsWith("config")) allUsec += s.usec;
  const scan = stats.get("scan");
  return { scanCalls: scan?.calls ?? 0, scanUsec: scan?.usec ?? 0, allUsec };
}
