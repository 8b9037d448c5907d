import type { NewAlert } from "../../lib/server/store";

/**
 * A no-ttl alert to raise in store tests: key, lock id and resource all `key`, message "m", raised now. Each test
 * overrides what it is about.
 */
export function testAlert(key: string, over: Partial<NewAlert> = {}): NewAlert {
  return {
    key,
    rule: "no-ttl",
    severity: "critical",
    lockId: key,
    backend: "redis",
    source: "s",
    resource: key,
    message: "m",
    evidence: { events: [] },
    raisedAt: new Date(),
    ...over,
  };
}
