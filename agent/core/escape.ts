/**
 * Key names and values in Redis are arbitrary bytes: binary tokens, hostile names, megabyte blobs. Everything the
 * agent shows goes through here, so the dashboard only ever receives bounded, printable text.
 */

export const DEFAULT_MAX_CHARS = 256;

function isPrintable(code: number): boolean {
  return code >= 0x20 && code !== 0x7f && !(code >= 0x80 && code < 0xa0);
}

/**
 * Printable text stays as it is (backslash doubled); control characters and bytes that are not valid UTF-8
 * become \xNN; the result is cut at maxChars with a note of how much was left out.
 * `totalBytes` is the full length when `bytes` is only a prefix that was read.
 */
export function escapeBytes(bytes: Uint8Array, maxChars = DEFAULT_MAX_CHARS, totalBytes = bytes.length): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length <= maxChars && plainAscii(buf)) {
    // The common case (a printable ASCII name or token) in one flat string: the loop below builds the same text
    // a character at a time, which V8 keeps as a chain of pieces (about 10 per name, kept with every lock).
    const left = totalBytes - buf.length;
    const text = buf.toString("latin1");
    return left > 0 ? `${text}…(+${left} bytes)` : text;
  }
  let out = "";
  let i = 0;
  let truncatedAt = -1;
  while (i < buf.length) {
    if (out.length >= maxChars) {
      truncatedAt = i;
      break;
    }
    const len = utf8SequenceLength(buf, i);
    if (len === 0) {
      out += `\\x${buf[i]!.toString(16).padStart(2, "0")}`;
      i += 1;
      continue;
    }
    const ch = buf.toString("utf8", i, i + len);
    const code = ch.codePointAt(0)!;
    if (ch === "\\") out += "\\\\";
    else if (len === 1 && !isPrintable(code)) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else if (
      len > 1 &&
      (!isPrintable(code) || (code >= 0x2028 && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069))
    )
      // Bidi overrides and line separators can disguise a key name in the browser: show them as code points.
      out += `\\u{${code.toString(16)}}`;
    else out += ch;
    i += len;
  }
  const left = truncatedAt >= 0 ? totalBytes - truncatedAt : totalBytes - buf.length;
  return left > 0 ? `${out}…(+${left} bytes)` : out;
}

/** Every byte printable ASCII other than the backslash: escapeBytes shows such bytes as they are. */
function plainAscii(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if (b < 0x20 || b > 0x7e || b === 0x5c) return false;
  }
  return true;
}

/** Length of a valid UTF-8 sequence starting at i, or 0 when the byte there does not start one. */
function utf8SequenceLength(buf: Buffer, i: number): number {
  const b0 = buf[i]!;
  if (b0 < 0x80) return 1;
  let len: number;
  let min: number;
  if (b0 >= 0xc2 && b0 <= 0xdf) [len, min] = [2, 0x80];
  else if (b0 >= 0xe0 && b0 <= 0xef) [len, min] = [3, 0x800];
  else if (b0 >= 0xf0 && b0 <= 0xf4) [len, min] = [4, 0x10000];
  else return 0;
  if (i + len > buf.length) return 0;
  let cp = b0 & (0xff >> (len + 1));
  for (let k = 1; k < len; k++) {
    const b = buf[i + k]!;
    if ((b & 0xc0) !== 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

/**
 * The shown start of a text escapeBytes cut ("…(+N bytes)" at its end), or null for a text shown whole. A cut text
 * names a prefix, never one exact value.
 */
export function cutPrefix(text: string): string | null {
  return /^(.*)…\(\+\d+ bytes\)$/s.exec(text)?.[1] ?? null;
}

export function escapeText(text: string, maxChars = DEFAULT_MAX_CHARS): string {
  return escapeBytes(Buffer.from(text, "utf8"), maxChars);
}
