import type { KeySample } from "../../agent/sources/redis/redis-port";

/**
 * KeySample builders with the exact bytes the libraries write. A string sample carries only a prefix of the value
 * (previewBytes), as the ioredis port reads it; `length` stays the full length.
 */

/** 2024-05-01T10:00:00.000Z */
export const NOW = 1_714_557_600_000;
export const PREVIEW = 256;

type Bytes = string | Buffer;
const b = (x: Bytes): Buffer => (Buffer.isBuffer(x) ? x : Buffer.from(x, "utf8"));

export function str(key: Bytes, value: Bytes, pttl = 30_000): KeySample {
  const v = b(value);
  return { key: b(key), type: "string", pttl, string: { prefix: v.subarray(0, PREVIEW), length: v.length } };
}

export function hash(key: Bytes, fields: Array<[Bytes, Bytes]>, pttl = 30_000, length = fields.length): KeySample {
  return { key: b(key), type: "hash", pttl, hash: { length, fields: fields.map(([f, v]) => [b(f), b(v)]) } };
}

export function zset(key: Bytes, members: Array<[Bytes, number]>, pttl = 30_000, length = members.length): KeySample {
  return { key: b(key), type: "zset", pttl, zset: { length, members: members.map(([m, s]) => [b(m), s]) } };
}

export function list(key: Bytes, items: Bytes[], pttl = -1, length = items.length): KeySample {
  return { key: b(key), type: "list", pttl, list: { length, items: items.map(b) } };
}

/** A companion that was read and does not exist. */
export function gone(key: Bytes): KeySample {
  return { key: b(key), type: "none", pttl: -2 };
}

export function related(...samples: KeySample[]): Map<string, KeySample> {
  return new Map(samples.map((s) => [s.key.toString("utf8"), s]));
}

/** Redisson client ids are UUID.randomUUID().toString(); thread ids are Java longs. */
export const CLIENT_A = "8743c9c0-0795-4907-87fd-6c719a6b4586";
export const CLIENT_B = "5f0c2a9e-3b1d-4c7a-9e2f-1a2b3c4d5e6f";
export const UUID4 = "9605c7e4-d873-4e4d-8b07-716a47bcb262";
/** crypto.randomBytes(16).toString("hex") */
export const HEX32 = "3f9a0c1d5e7b0a4f6c8d0e1f2a3b4c5d";
/** uuid.uuid1(node=0x525400123456, clock_seq=0x2a3).hex made at 2024-05-01T09:59:58.250Z */
export const UUID1_HEX = "916948a007a111ef82a3525400123456";
/** base64.StdEncoding of 16 bytes (go-redsync) */
export const B64_24 = "q/nAo7fhTSKRxPA7jmpdFw==";
/** base64.RawURLEncoding of 16 bytes (bsm/redislock) */
export const B64URL_22 = "Xk-b-hPI4tB6ax88nY56YQ";
