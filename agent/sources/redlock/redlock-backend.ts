import type { BackendModule } from "../backend-module";
import { loadRedlockConfig, type RedlockConfig } from "./redlock-config";
import { createRedlockSources } from "./redlock-factory";

/** REDLOCK_NODES and the groups of LOCKSCOPE_CONFIG: one source per group. */
export const redlockBackend: BackendModule<RedlockConfig> = {
  name: "redlock",
  load: (env, file) => {
    const config = loadRedlockConfig(env, file);
    return config.groups.length > 0 ? config : null;
  },
  create(config, deps) {
    const redlock = createRedlockSources(config, {
      agentId: deps.agent.agentId,
      newId: deps.newId,
      log: deps.log,
      lockPatterns: deps.agent.lockPatterns,
      commandTimeoutMs: deps.agent.commandTimeoutMs,
      // The Redis settings apply to each node of a group as to a single Redis node.
      changeDetection: deps.agent.changeDetection,
      sweepMs: deps.agent.sweepMs,
      serverTimeBudgetPercent: deps.agent.serverTimeBudgetPercent,
      push: deps.push,
    });
    return { ...redlock, watched: config.groups.map((g) => `Redlock group ${g.name} (${g.nodes.length} nodes)`) };
  },
};
