import type { Lock } from "../../lib/contract/lock";

/**
 * A plain Redis string lock for unit tests of the dashboard's state, queries and views: resource `lock:<id>`, owner
 * "o", a 10 s TTL, no hazards, on agent a1. Each test overrides what it is about.
 */
export function testLock(id: string, over: Partial<Lock> = {}): Lock {
  return {
    id,
    backend: "redis",
    source: "redis://127.0.0.1:1/0",
    resource: `lock:${id}`,
    owner: "o",
    library: "generic",
    rule: "r",
    ttlMs: 10_000,
    holder: null,
    waiters: [],
    since: new Date(0).toISOString(),
    observedAt: new Date(0).toISOString(),
    kind: "string",
    valuePreview: null,
    hazards: [],
    agentId: "a1",
    ...over,
  };
}
