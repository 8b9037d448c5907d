/**
 * Every backend the agent can watch, in the order they are started. Adding a backend: a folder beside these with
 * its source and one BackendModule, its name in lib/contract/lock.ts BACKENDS, and one line here.
 */
import type { BackendModule } from "./backend-module";
import { redisBackend } from "./redis/redis-backend";
import { redlockBackend } from "./redlock/redlock-backend";
import { mysqlBackend } from "./mysql/mysql-backend";
import { postgresBackend } from "./postgres/postgres-backend";
import { zookeeperBackend } from "./zookeeper/zookeeper-backend";

export const BACKEND_MODULES: ReadonlyArray<BackendModule<unknown>> = [
  redisBackend,
  redlockBackend,
  zookeeperBackend,
  postgresBackend,
  mysqlBackend,
];
