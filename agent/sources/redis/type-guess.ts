/**
 * The type a new key's family most likely has, learned from the keys of that family already read. A new key of
 * unknown type is read as a string (PTTL and GETRANGE, two commands) because most locks are strings; a key of
 * another type then costs TYPE and PTTL, then TYPE, PTTL, its length and its bounded read: eight commands where two
 * would do once the type is known. Keys of one family (`orderLock:17`, `orderLock:18`) are usually made by one
 * library and share a type, so the first read of a family teaches the next ones: a Redisson hash is then read with
 * PTTL and HSCAN straight away. A guess is only a choice of first read: a wrong one shows as a WRONGTYPE error and
 * the key is read the long way, so what the agent reports never depends on it.
 *
 * The family is the key up to and including its last separator byte (`:` `/` `.` `-` `_` `{` `}` `|` `#`), at most
 * FAMILY_MAX_BYTES long, of a key of at most KEY_MAX_BYTES (any other key has no family, and is read as before). Each family keeps a
 * majority vote (Boyer-Moore: the stored type and a count), so a family that mixes types guesses the type most of
 * its keys have. At most MAX_FAMILIES are kept; when full, the table starts over (guesses are only a speed-up).
 */

export const FAMILY_MAX_BYTES = 128;
export const MAX_FAMILIES = 4096;
const SEPARATORS = new Set([0x3a, 0x2f, 0x2e, 0x2d, 0x5f, 0x7b, 0x7d, 0x7c, 0x23]);

/** A key longer than this has no family (nor a long scan for one: hostile keys can be megabytes). */
export const KEY_MAX_BYTES = 256;

/** The key's family as a latin1 string (one char per byte), or undefined when it has none. */
export function familyOf(key: Buffer): string | undefined {
  if (key.length > KEY_MAX_BYTES) return undefined;
  for (let i = key.length - 1; i >= 0; i--) {
    if (SEPARATORS.has(key[i]!)) return i + 1 > FAMILY_MAX_BYTES ? undefined : key.toString("latin1", 0, i + 1);
  }
  return undefined;
}

export class TypeGuesses {
  private readonly families = new Map<string, { type: string; votes: number }>();

  constructor(private readonly maxFamilies = MAX_FAMILIES) {}

  /** The type most keys of this key's family had when read, or undefined (no family, or none read yet). */
  guess(key: Buffer): string | undefined {
    const family = familyOf(key);
    return family === undefined ? undefined : this.families.get(family)?.type;
  }

  /** Records the type a key of unknown type turned out to have ("none", a key gone, teaches nothing). */
  learn(key: Buffer, type: string): void {
    if (type === "none") return;
    const family = familyOf(key);
    if (family === undefined) return;
    const vote = this.families.get(family);
    if (!vote) {
      if (this.families.size >= this.maxFamilies) this.families.clear();
      this.families.set(family, { type, votes: 1 });
    } else if (vote.type === type) vote.votes = Math.min(vote.votes + 1, 1_000_000);
    else if (--vote.votes <= 0) this.families.set(family, { type, votes: 1 });
  }

  get size(): number {
    return this.families.size;
  }
}
