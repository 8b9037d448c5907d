import { hash } from "node:crypto";
import type { KeySample } from "./redis-port";

/**
 * The safety sweep's cheap re-read (track mode). A full read of a lock is TYPE, PTTL, a length and a bounded read
 * (4 commands); the sweep only has to know whether anything changed since that read, and PTTL plus the same
 * bounded read (2 commands) answers it whenever the bounded read saw the whole value: a string shorter than the
 * prefix read, a hash or set whose first scan page was the whole of it, a zset or list shorter than the page. A
 * changed type shows as a WRONGTYPE error of the bounded read, a deletion as PTTL -2. Anything else (a long value,
 * a large hash, an error, a key gone) is not "unchanged": the caller reads it fully, which decides the events.
 */

/**
 * How far the lease end by a sweep read may be from the one known before it counts as changed. Below the
 * tracker's renewal tolerance (150 ms, core/classify.ts), so every TTL change the tracker would report is re-read;
 * a larger drift from round trips only costs a full read.
 */
export const SWEEP_TTL_TOLERANCE_MS = 100;

/**
 * A digest of what a bounded read saw, when it saw the whole value (else null: the read cannot vouch for the
 * rest). Equal digests mean equal type, length and content. TTL is compared separately (it changes with time).
 */
export function contentDigest(s: KeySample, previewBytes: number, page: number): string | null {
  // The bytes hashed: the type, then each part as a 4-byte length and the part. Gathered first and hashed in one
  // call (no Hash object and no update per part: the digest of each new lock was a visible share of discovery).
  const parts: Buffer[] = [Buffer.from(s.type)];
  const add = (b: Buffer) => {
    const n = Buffer.allocUnsafe(4);
    n.writeUInt32BE(b.length);
    parts.push(n, b);
  };
  if (s.type === "string" && s.string) {
    if (s.string.length >= previewBytes || s.string.prefix.length !== s.string.length) return null;
    add(s.string.prefix);
  } else if (s.type === "hash" && s.hash) {
    if (s.hash.fields.length !== s.hash.length) return null;
    for (const [f, v] of s.hash.fields) {
      add(f);
      add(v);
    }
  } else if (s.type === "zset" && s.zset) {
    if (s.zset.members.length !== s.zset.length || s.zset.length >= page) return null;
    for (const [m, score] of s.zset.members) {
      add(m);
      add(Buffer.from(String(score)));
    }
  } else if (s.type === "list" && s.list) {
    if (s.list.items.length !== s.list.length || s.list.length >= page) return null;
    for (const item of s.list.items) add(item);
  } else if (s.type === "set" && s.set) {
    if (s.set.members.length !== s.set.length) return null;
    for (const m of s.set.members) add(m);
  } else return null;
  return hash("sha1", Buffer.concat(parts), "base64");
}

/** What the sweep knew of a lock from its last full read. */
export interface KnownContent {
  digest: string;
  /** Lease end by that read (ms, the source's clock), or undefined without a TTL. */
  deadlineMs: number | undefined;
}

/**
 * Whether a cheap re-read (null: it could not be complete) shows the lock exactly as known. `atMs` is when the
 * re-read's reply arrived; its lease end is atMs + pttl + 1, as noteDeadline computes it.
 */
export function unchangedSince(
  known: KnownContent,
  resampled: KeySample | null,
  atMs: number,
  previewBytes: number,
  page: number,
): boolean {
  if (!resampled || resampled.pttl === -2) return false;
  if (resampled.pttl < 0) {
    if (known.deadlineMs !== undefined) return false;
  } else {
    if (known.deadlineMs === undefined) return false;
    if (Math.abs(atMs + resampled.pttl + 1 - known.deadlineMs) > SWEEP_TTL_TOLERANCE_MS) return false;
  }
  return contentDigest(resampled, previewBytes, page) === known.digest;
}
