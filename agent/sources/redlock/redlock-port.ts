/**
 * The commands the Redlock source sends to each node of a group: the single-node port's SCAN and pipelined
 * sample (TYPE, PTTL and a bounded read), plus TIME for clock skew. All read-only.
 */
import type { RedisLockPort } from "../redis/redis-port";

export interface RedlockNodePort extends Pick<RedisLockPort, "scan" | "sample"> {
  /** TIME: the node's clock as [unix seconds, microseconds] (parsed by clock-skew.ts parseTimeReply). */
  time(): Promise<unknown>;
}
