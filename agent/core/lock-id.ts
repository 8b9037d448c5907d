import { hash } from "node:crypto";
import type { Backend } from "../../lib/contract/lock";

/**
 * A lock's id is stable across polls, agents and restarts: the same key on the same source is the same lock.
 * Hashing the raw bytes keeps it URL-safe whatever the key contains.
 */
export function lockId(backend: Backend, source: string, rawResource: Uint8Array | string): string {
  const head = `${backend}\u0000${source}\u0000`;
  // One-shot hash (no Hash object a lock: about a tenth of the digest's cost in a discovery profile).
  const data = typeof rawResource === "string" ? head + rawResource : Buffer.concat([Buffer.from(head), rawResource]);
  // A copy, not a slice: a 22-character slice keeps its 43-character parent alive with it, for every lock the agent
  // tracks (about 40 bytes and one more object a lock: 4 MB at 100,000 locks).
  return Buffer.from(hash("sha256", data, "base64url"), "latin1").toString("latin1", 0, 22);
}
