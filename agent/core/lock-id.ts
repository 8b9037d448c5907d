import { createHash } from "node:crypto";
import type { Backend } from "../../lib/contract/lock";

/**
 * A lock's id is stable across polls, agents and restarts: the same key on the same source is the same lock.
 * Hashing the raw bytes keeps it URL-safe whatever the key contains.
 */
export function lockId(backend: Backend, source: string, rawResource: Uint8Array | string): string {
  const h = createHash("sha256");
  h.update(`${backend}\u0000${source}\u0000`);
  h.update(rawResource);
  return h.digest("base64url").slice(0, 22);
}
