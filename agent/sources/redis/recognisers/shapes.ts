import type { Hazard } from "../../../../lib/contract/lock";
import { escapeBytes } from "../../../core/escape";
import type { KeySample } from "../redis-port";

/**
 * Token shapes shared by the recognisers. Values are arbitrary bytes and only a prefix may have been read, so
 * every test here works on bytes, checks that the whole value was read when it needs the whole value, and never
 * throws.
 */

export const OWNER_CHARS = 128;
export const DETAIL_CHARS = 96;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The complete string value, or null when the key is not a string or only a prefix of it was read. */
export function wholeString(sample: KeySample): Buffer | null {
  const s = sample.string;
  if (sample.type !== "string" || !s || !Buffer.isBuffer(s.prefix)) return null;
  return s.prefix.length === s.length ? s.prefix : null;
}

/** Bytes as text when they are all printable ASCII, else null: formats below are ASCII, anything else is not them. */
export function ascii(bytes: Buffer, max = 4096): string | null {
  if (bytes.length > max) return null;
  for (const b of bytes) if (b < 0x20 || b > 0x7e) return null;
  return bytes.toString("latin1");
}

/** Lower-case canonical UUID (RFC 4122 variant); returns its version nibble, or null. */
export function uuidVersion(text: string): number | null {
  const m = UUID_RE.exec(text);
  return m ? parseInt(m[1]!, 16) : null;
}

export function isUuid4(text: string): boolean {
  return uuidVersion(text) === 4;
}

export function isLowerHex(text: string, length: number): boolean {
  return text.length === length && /^[0-9a-f]+$/.test(text);
}

/**
 * A decimal integer as Redis INCRBY writes it (optional minus, no leading zeros except "0"), within the safe
 * integer range; null otherwise.
 */
export function decimalInteger(text: string): number | null {
  if (!/^-?(0|[1-9][0-9]{0,15})$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

/** A score that can be compared with a clock: finite and within the range of Date. */
export function finiteMs(score: number): number | null {
  return Number.isFinite(score) && Math.abs(score) <= 8.64e15 ? score : null;
}

export function isoOrNull(ms: number | null): string | null {
  if (ms === null) return null;
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export function owner(bytes: Buffer, total = bytes.length): string {
  return escapeBytes(bytes, OWNER_CHARS, total);
}

export function text(bytes: Buffer, max = DETAIL_CHARS): string {
  return escapeBytes(bytes, max);
}

/** Key bytes after an ASCII prefix, escaped for display (the key itself may be any bytes). */
export function keyTail(key: Buffer, prefixLength: number, max = DETAIL_CHARS): string {
  return escapeBytes(key.subarray(Math.min(prefixLength, key.length)), max);
}

export function hazard(code: string, severity: Hazard["severity"], message: string): Hazard {
  return { code, severity, message };
}

/** Thread ids are Java longs: a number when JavaScript can hold it exactly, else the digits. */
export function longId(digits: string): number | string {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : digits;
}

export function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}
