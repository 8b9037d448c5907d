import { createHash } from "node:crypto";

/**
 * The exact holding a force-release is guarded by. `Lock.owner` is a display form (escaped, cut at 128 characters
 * with "(+N bytes)"), so two holders whose values share a long prefix look the same; the fingerprint does not.
 * Format: `sha1:<40 hex>`, the same digest Redis's `redis.sha1hex` computes, so a Lua script can compare it
 * atomically on the server without the agent ever sending the whole value.
 */
export const FINGERPRINT_PREFIX = "sha1:";

export function fingerprintOf(...parts: ReadonlyArray<Uint8Array | string>): string {
  const h = createHash("sha1");
  parts.forEach((p, i) => {
    // A separator that cannot occur inside the hex/decimal parts ZooKeeper uses; single-part digests (Redis values)
    // stay plain sha1 of the bytes, comparable with redis.sha1hex.
    if (i > 0) h.update("\u0000");
    h.update(p);
  });
  return `${FINGERPRINT_PREFIX}${h.digest("hex")}`;
}

/** The hex digest of a fingerprint, as redis.sha1hex returns it; null when it is not one of ours. */
export function fingerprintHex(fp: string): string | null {
  const m = /^sha1:([0-9a-f]{40})$/.exec(fp);
  return m ? m[1]! : null;
}

/** From the hex digest that redis.sha1hex returned. */
export function fingerprintFromHex(hex: string): string {
  return `${FINGERPRINT_PREFIX}${hex.toLowerCase()}`;
}
