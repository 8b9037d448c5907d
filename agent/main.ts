/**
 * Composition root of the agent: config -> clients -> sources -> loop -> transport.
 * Run alone with `npm run agent` (DASHBOARD_URL, AGENT_TOKEN), or together with the dashboard by `npm start`.
 */
import { newEventId } from "./core/event-id";
import { loadOrExit } from "../lib/config/env";
import { limitHeapGrowth } from "../lib/runtime/heap-growth";
import { AGENT_HEAP_GROWING_PERCENT } from "./node-flags";
import { AgentLoop, type WatchedSource } from "./agent";
import { loadAgentConfig } from "./config";
import type { BackendDeps, BackendInstance } from "./sources/backend-module";
import { BACKEND_MODULES } from "./sources/backends";
import { DashboardLink } from "./transport/dashboard-link";

const VERSION = "0.1.0";

function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} agent ${line}\n`);
}

async function main(): Promise<void> {
  // Before any lock is tracked, as in the dashboard: the heap then stays within half again of what is live (see
  // node-flags.ts). At 100,000 locks on a 10,000,000-key server the agent without a limit peaked at 1,124 MB of
  // RSS (BENCHMARKS.md, issue 11).
  limitHeapGrowth(AGENT_HEAP_GROWING_PERCENT);
  const config = loadOrExit("lockscope agent", () => loadAgentConfig());
  // Every backend's configuration is read before anything connects, so a typo stops the agent at once.
  const configured = BACKEND_MODULES.flatMap((backend) => {
    const backendConfig = loadOrExit("lockscope agent", () => backend.load(process.env, config.file));
    return backendConfig === null ? [] : [{ backend, backendConfig }];
  });
  // The link and the loop refer to each other: the link asks the loop for state, the loop publishes to the link.
  // Declared first: keyspace notifications may publish through it as soon as the Redis sources are ready.
  const agent: { loop?: AgentLoop } = {};
  const deps: BackendDeps = {
    agent: config,
    newId: newEventId,
    log,
    push: (output) => agent.loop?.push(output),
    pollSoon: (source) => void agent.loop?.pollSource(source),
  };
  const backends: BackendInstance[] = [];
  for (const { backend, backendConfig } of configured) {
    const instance = backend.create(backendConfig, deps);
    backends.push(instance);
    await instance.ready;
  }
  const sources: WatchedSource[] = backends.flatMap((b) => b.sources);
  const link = new DashboardLink({
    dashboardUrl: config.dashboardUrl,
    agentToken: config.agentToken,
    agentId: config.agentId,
    agentName: config.agentName,
    version: VERSION,
    bufferEvents: config.bufferEvents,
    // Held until the first poll has read every source: before it each one is "not polled yet", which is not down.
    ready: () => (agent.loop?.polls ?? 0) > 0,
    sources: () => agent.loop?.statuses() ?? [],
    locks: () => agent.loop?.locks() ?? [],
    log,
    release: (cmd) =>
      agent.loop
        ? agent.loop.release(cmd)
        : Promise.resolve({ outcome: "error", message: "agent starting", plan: [], perNode: [] }),
  });
  const loop = (agent.loop = new AgentLoop(sources, link, {
    agentId: config.agentId,
    pollIntervalMs: config.pollIntervalMs,
    log,
    maxLocksPerSource: config.maxLocksPerSource,
  }));
  const watched = backends.flatMap((b) => b.watched);
  log(`watching ${watched.join(", ") || "nothing"}; streaming to ${config.dashboardUrl}`);
  loop.start();

  const shutdown = (signal: string) => {
    log(`${signal}: stopping (${link.pendingEvents} events not yet acknowledged)`);
    loop.stop();
    link.close();
    for (const b of backends) void b.close();
    process.exit(0);
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

main().catch((err: unknown) => {
  process.stderr.write(`lockscope agent: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
