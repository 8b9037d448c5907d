import { escapeBytes } from "../../core/escape";
import type { KeySample } from "./redis-port";

const MAX = 256;

/** A short, escaped, human-readable preview of a sampled key's content, whatever its type. */
export function previewSample(s: KeySample): string | null {
  if (s.string) return escapeBytes(s.string.prefix, MAX, s.string.length);
  if (s.hash)
    return list(
      s.hash.fields.map(([f, v]) => `${escapeBytes(f, 64)}=${escapeBytes(v, 32)}`),
      s.hash.length,
    );
  if (s.zset)
    return list(
      s.zset.members.map(([m, score]) => `${escapeBytes(m, 64)}(${score})`),
      s.zset.length,
    );
  if (s.list)
    return list(
      s.list.items.map((i) => escapeBytes(i, 64)),
      s.list.length,
    );
  if (s.set)
    return list(
      s.set.members.map((m) => escapeBytes(m, 64)),
      s.set.length,
    );
  return null;
}

function list(items: string[], total: number): string {
  let out = items.join(", ");
  if (out.length > MAX) out = `${out.slice(0, MAX)}…`;
  return total > items.length ? `${out} (+${total - items.length} more)` : out;
}
