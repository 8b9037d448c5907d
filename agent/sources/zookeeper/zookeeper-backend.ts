import type { BackendModule } from "../backend-module";
import { loadZookeeperConfig, type ZookeeperConfig } from "./zk-config";
import { createZookeeperSource } from "./zookeeper-source";

/** ZK_CONNECT: one source per ensemble. Child watches make the agent poll sooner; the periodic poll resyncs. */
export const zookeeperBackend: BackendModule<ZookeeperConfig> = {
  name: "zookeeper",
  load: (env) => loadZookeeperConfig(env),
  create(config, deps) {
    const zk = createZookeeperSource(config, { agentId: deps.agent.agentId, newId: deps.newId, log: deps.log });
    zk.setOnChange(() => deps.pollSoon(zk));
    return {
      sources: [zk],
      ready: zk.whenConnected(5000).then(() => undefined),
      watched: [zk.status().id],
      close: () => zk.close(),
    };
  },
};
