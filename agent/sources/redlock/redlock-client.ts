import type { Redis } from "ioredis";
import { IoredisLockPort } from "../redis/redis-client";
import type { LeanCompanion } from "../redis/lean-connection";
import type { RedlockNodePort } from "./redlock-port";

/** The single-node ioredis port plus TIME; connections come from redis-client.ts connectRedis. */
export class IoredisRedlockPort implements RedlockNodePort {
  private readonly base: IoredisLockPort;

  constructor(
    private readonly client: Redis,
    lean: LeanCompanion | null = null,
  ) {
    this.base = new IoredisLockPort(client, lean);
  }

  scan(cursor: string, count: number) {
    return this.base.scan(cursor, count);
  }

  sample(keys: Buffer[], expectedTypes: ReadonlyArray<string | undefined>, previewBytes: number) {
    return this.base.sample(keys, expectedTypes, previewBytes);
  }

  time(): Promise<unknown> {
    return this.client.time();
  }
}
