import type { BackendModule } from "../backend-module";
import { NodePgPort } from "./pg-client";
import { loadPostgresConfig, type PostgresConfig } from "./pg-config";
import { PostgresSource } from "./pg-source";

/** POSTGRES_URLS: one source per server; one connection sees the advisory locks of all its databases. */
export const postgresBackend: BackendModule<PostgresConfig> = {
  name: "postgres",
  load: (env) => loadPostgresConfig(env),
  create(config, deps) {
    const ports = config.targets.map(
      (t) =>
        new NodePgPort({
          url: t.url,
          statementTimeoutMs: config.settings.statementTimeoutMs,
          connectTimeoutMs: deps.agent.commandTimeoutMs,
        }),
    );
    const sources = config.targets.map(
      (t, i) =>
        new PostgresSource(ports[i]!, {
          sourceId: t.id,
          agentId: deps.agent.agentId,
          newId: deps.newId,
          log: deps.log,
          settings: config.settings,
          hazardMemoryMs: deps.agent.hazardMemoryMs,
        }),
    );
    return {
      sources,
      // The first poll connects; a server that is down is reported by it and retried every poll.
      ready: Promise.resolve(),
      watched: config.targets.map((t) => t.id),
      close: () => Promise.all(ports.map((p) => p.close())).then(() => undefined),
    };
  },
};
