import { hash } from "node:crypto";

/**
 * The exact holding a force-release is guarded by. `Lock.owner` is a display form (escaped, cut at 128 characters
 * with "(+N bytes)"), so two holders whose values share a long prefix look the same; the fingerprint does not.
 * Format: `sha1:<40 hex>`, the same digest Redis's `redis.sha1hex` computes, so a Lua script can compare it
 * atomically on the server without the agent ever sending the whole value.
 */
export const FINGERPRINT_PREFIX = "sha1:";

export function fingerprintOf(...parts: ReadonlyArray<Uint8Array | string>): string {
  // A separator that cannot occur inside the hex/decimal parts ZooKeeper uses; single-part digests (Redis values)
  // stay plain sha1 of the bytes, comparable with redis.sha1hex. One-shot: no Hash object a lock.
  const data =
    parts.length === 1
      ? parts[0]!
      : Buffer.concat(parts.flatMap((p, i) => (i > 0 ? [SEPARATOR, bytesOf(p)] : [bytesOf(p)])));
  return fingerprintFromHex(hash("sha1", data, "hex"));
}

const SEPARATOR = Buffer.from([0]);

/** A string part as its UTF-8 bytes; a byte part as it is (Buffer.from would copy it). */
const bytesOf = (p: Uint8Array | string): Uint8Array => (typeof p === "string" ? Buffer.from(p) : p);

/** The hex digest of a fingerprint, as redis.sha1hex returns it; null when it is not one of ours. */
export function fingerprintHex(fp: string): string | null {
  const m = /^sha1:([0-9a-f]{40})$/.exec(fp);
  return m ? m[1]! : null;
}

/**
 * From a hex digest (ours, or what redis.sha1hex returned). One flat string: the prefix joined to the digest is a
 * V8 cons string, two objects (the joint and the digest) kept with every lock for as long as it is tracked.
 */
export function fingerprintFromHex(hex: string): string {
  return Buffer.from(`${FINGERPRINT_PREFIX}${hex.toLowerCase()}`, "latin1").toString("latin1");
}
