/**
 * Linux /proc reads for the bench: the process tree it started (tsx runs the real script in a child node process,
 * so the agent is a grandchild) and the peak resident set of one process.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/**
 * Sample of /proc/<pid>/stat (comm may hold spaces and parentheses, so fields are read after the last ")"):
 *   4242 (node) S 4200 4242 4200 0 -1 4194304 ...
 */
export function parseStatPpid(stat: string): number | null {
  const end = stat.lastIndexOf(")");
  if (end === -1) return null;
  const fields = stat.slice(end + 2).split(" ");
  const ppid = Number(fields[1]);
  return Number.isInteger(ppid) ? ppid : null;
}

/** utime + stime of /proc/<pid>/stat (fields 14 and 15), in clock ticks. */
export function parseStatCpuTicks(stat: string): number | null {
  const end = stat.lastIndexOf(")");
  if (end === -1) return null;
  const fields = stat.slice(end + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks : null;
}

let clockTicks: number | null = null;
/** Clock ticks per second (getconf CLK_TCK; 100 on Linux unless the kernel says otherwise). */
function ticksPerSecond(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", timeout: 2000 }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU seconds (user + system) a process has used so far, or null when it is gone. */
export function cpuSeconds(pid: number): number | null {
  const stat = read(`/proc/${pid}/stat`);
  const ticks = stat === null ? null : parseStatCpuTicks(stat);
  return ticks === null ? null : ticks / ticksPerSecond();
}

/**
 * Sample of /proc/<pid>/status:
 *   VmPeak:  1123456 kB
 *   VmHWM:     98765 kB
 *   VmRSS:     91234 kB
 */
export function parseStatusKb(status: string, field: "VmHWM" | "VmRSS"): number | null {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
  return m ? Number(m[1]) : null;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null; // the process ended between listing and reading
  }
}

export function memoryKb(pid: number): { hwmKb: number | null; rssKb: number | null } {
  const status = read(`/proc/${pid}/status`);
  return {
    hwmKb: status === null ? null : parseStatusKb(status, "VmHWM"),
    rssKb: status === null ? null : parseStatusKb(status, "VmRSS"),
  };
}

export function commandLine(pid: number): string {
  return (read(`/proc/${pid}/cmdline`) ?? "").split("\0").join(" ").trim();
}

/** Every live descendant of rootPid, parents before children. */
export function descendants(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    const ppid = stat === null ? null : parseStatPpid(stat);
    if (ppid === null) continue;
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [rootPid];
  while (queue.length > 0 && out.length < 10_000) {
    for (const child of children.get(queue.shift()!) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

/** Every process whose command line matches, with its CPU seconds so far (PostgreSQL's backends of one database). */
export function cpuOfProcessesMatching(match: (commandLine: string) => boolean): Map<number, number> {
  const out = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (!match(commandLine(pid))) continue;
    const cpu = cpuSeconds(pid);
    if (cpu !== null) out.set(pid, cpu);
  }
  return out;
}

/** CPU seconds used between two samples of cpuOfProcessesMatching (a process new in the second counts whole). */
export function cpuBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [pid, cpu] of after) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

/** The deepest process (rootPid included) whose command line names the script: tsx's child that runs it. */
export function scriptProcess(rootPid: number, script: string): number | null {
  const candidates = [rootPid, ...descendants(rootPid)].filter((pid) => commandLine(pid).includes(script));
  return candidates.length ? candidates[candidates.length - 1]! : null;
}

/**
 * Last resort on exit: SIGKILL every process this bench started that is still alive (deepest first, so a tsx
 * wrapper's node child is not left behind as an orphan). Only this process's own descendants, by pid.
 */
export function killOwnDescendantsSync(): string[] {
  const killed: string[] = [];
  for (const pid of descendants(process.pid).reverse()) {
    const cmd = commandLine(pid);
    // tsx's own esbuild service: it ends with the process that started it.
    if (cmd.includes("esbuild --service")) continue;
    const what = `${pid} ${cmd.slice(0, 120)}`;
    try {
      process.kill(pid, "SIGKILL");
      killed.push(what);
    } catch {
      // already gone
    }
  }
  return killed;
}
