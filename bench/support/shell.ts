/** Runs a short command with a hard time limit; the bench never waits on a child without one. */
import { spawn } from "node:child_process";

export interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
}

export function runCommand(cmd: string, args: string[], timeoutMs: number): Promise<ShellResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout = (stdout + d.toString()).slice(-64_000)));
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-16_000)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${cmd} ${args.join(" ")}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, wallMs: performance.now() - started });
    });
  });
}
