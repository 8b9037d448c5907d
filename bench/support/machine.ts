/** Facts about the machine a run was made on, for the report. */
import { execFileSync } from "node:child_process";
import { cpus, freemem, loadavg, totalmem } from "node:os";

export interface MachineFacts {
  at: string;
  nproc: number;
  cpuModel: string;
  memTotalMb: number;
  memFreeMb: number;
  /** 1-minute load average at the start and at the end of the run: the cores are shared. */
  loadStart: number;
  loadEnd?: number;
  /** Highest 1-minute load average sampled during the run (every 5 s). */
  loadMax?: number;
  redisServer: string;
  redisCli: string;
  node: string;
  kernel: string;
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", timeout: 5000 }).trim().split("\n")[0]!;
  } catch {
    return "not found";
  }
}

export function machineFacts(): MachineFacts {
  return {
    at: new Date().toISOString(),
    nproc: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    memTotalMb: Math.round(totalmem() / 1048576),
    memFreeMb: Math.round(freemem() / 1048576),
    loadStart: loadavg()[0]!,
    redisServer: version("redis-server", ["--version"]),
    redisCli: version("redis-cli", ["--version"]),
    node: process.version,
    kernel: version("uname", ["-r"]),
  };
}

export function currentLoad(): number {
  return loadavg()[0]!;
}
