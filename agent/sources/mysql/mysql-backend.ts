import type { BackendModule } from "../backend-module";
import { Mysql2Port } from "./mysql-client";
import { loadMysqlConfig, type MysqlConfig } from "./mysql-config";
import { MysqlSource } from "./mysql-source";

/** MYSQL_URLS: one source per MySQL or MariaDB server (user-level locks are server-wide). */
export const mysqlBackend: BackendModule<MysqlConfig> = {
  name: "mysql",
  load: (env) => loadMysqlConfig(env),
  create(config, deps) {
    const ports = config.targets.map(
      (t) =>
        new Mysql2Port({
          url: t.url,
          statementTimeoutMs: config.settings.statementTimeoutMs,
          connectTimeoutMs: deps.agent.commandTimeoutMs,
        }),
    );
    const sources = config.targets.map(
      (t, i) =>
        new MysqlSource(ports[i]!, {
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
