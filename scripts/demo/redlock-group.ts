/**
 * node-redlock clients on the demo's Redlock group of five throwaway redis-servers, and the freezer that now and
 * then stops nodes (SIGSTOP) so the quorum grid shows a partial view, at-risk and quorum-lost (see freeze-plan.ts).
 */
import { Redis } from "ioredis";
import Redlock, { type Lock } from "redlock";
import type { DemoServer } from "./demo-processes";
import { frozenNodes } from "./freeze-plan";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rand = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

/** ioredis clients that give up on a frozen node quickly instead of queueing behind it. */
export function groupClients(nodes: readonly DemoServer[]): Redis[] {
  return nodes.map((n) => {
    const c = new Redis({ host: "127.0.0.1", port: n.port, commandTimeout: 400, maxRetriesPerRequest: 0 });
    c.on("error", () => undefined); // a frozen or stopped node: the lock attempt fails, the demo goes on
    return c;
  });
}

/** Holds a lock for a while with node-redlock's own extend, as a job that renews its lease while it works. */
async function longJob(redlock: Redlock, resource: string, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    let lock: Lock | null = null;
    try {
      lock = await redlock.acquire([resource], 8000);
      const until = Date.now() + rand(15_000, 40_000);
      while (Date.now() < until && !stopped()) {
        await sleep(3000);
        lock = await redlock.extend(lock, 8000);
      }
      await lock.release();
    } catch {
      // quorum not reached (frozen nodes) or the extend failed: the lease runs out on its own
    }
    await sleep(rand(1000, 4000));
  }
}

export interface RedlockDemo {
  redlock: Redlock;
  stop(): void;
}

export function startRedlockDemo(nodes: readonly DemoServer[]): RedlockDemo {
  const clients = groupClients(nodes);
  const redlock = new Redlock(clients, { retryCount: 2, retryDelay: 200, retryJitter: 100 });
  let stopped = false;
  const startedAt = Date.now();
  const frozen = new Set<number>();
  const freezer = setInterval(() => {
    const want = new Set(frozenNodes(Date.now() - startedAt, nodes.length));
    nodes.forEach((n, i) => {
      if (want.has(i) && !frozen.has(i)) n.freeze();
      if (!want.has(i) && frozen.has(i)) n.thaw();
    });
    frozen.clear();
    for (const i of want) frozen.add(i);
  }, 250);
  void longJob(redlock, "payments:settlement-lock", () => stopped);
  void longJob(redlock, "reports:nightly-export-lock", () => stopped);
  return {
    redlock,
    stop() {
      stopped = true;
      clearInterval(freezer);
      for (const n of nodes) n.thaw();
      for (const c of clients) c.disconnect();
    },
  };
}
