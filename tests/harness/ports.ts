import { createServer } from "node:net";

/** A free TCP port on loopback, chosen by the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Polls `check` until it returns true or the deadline passes; the condition, never a fixed sleep. `state`, if
 * given, is asked at the deadline and printed with the timeout: where a wait that ran out was stuck.
 */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  {
    timeoutMs = 10_000,
    intervalMs = 50,
    state,
  }: { timeoutMs?: number; intervalMs?: number; state?: () => string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ""}` +
      (state ? `; ${state()}` : ""),
  );
}
