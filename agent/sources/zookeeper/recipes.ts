/**
 * Recognising which client library made a lock parent's children, from their names (and, where names collide,
 * their data). Facts per library are in ../shared/reference/lock-formats.md; rules go most specific first and each
 * result names the rule that matched.
 */
import type { ZkContender } from "../../../lib/contract/lock";

export type ContenderMode = ZkContender["mode"];

export type RecipeId =
  | "seeds-parent-lock"
  | "simple-ephemeral"
  | "zookeeper-docs-lock"
  | "zookeeper-write-lock"
  | "curator-mutex"
  | "curator-rwlock"
  | "curator-semaphore-v2"
  | "curator-leader-latch"
  | "kazoo-lock"
  | "kazoo-semaphore"
  | "npm-zk-lock"
  | "generic-sequential";

/** Whom a waiter of a recipe watches, which decides the inferred watch chain and the herd hazard. */
export type WaitPolicy =
  /** the contender just before it (any mode); readers: the nearest writer before them */
  | "predecessor"
  /** as predecessor, but readers watch the first (lowest) writer of the queue: Curator's readLockPredicate */
  | "predecessor-first-writer"
  /** every waiter watches the parent's children: one change wakes them all */
  | "children";

export interface RecipeInfo {
  library: string;
  waitPolicy: WaitPolicy;
}

export const RECIPES: Readonly<Record<RecipeId, RecipeInfo>> = {
  "seeds-parent-lock": { library: "seeds", waitPolicy: "predecessor" },
  "simple-ephemeral": { library: "generic", waitPolicy: "predecessor" },
  "zookeeper-docs-lock": { library: "zookeeper-docs", waitPolicy: "predecessor" },
  "zookeeper-write-lock": { library: "zookeeper-recipes", waitPolicy: "predecessor" },
  "curator-mutex": { library: "curator", waitPolicy: "predecessor" },
  "curator-rwlock": { library: "curator", waitPolicy: "predecessor-first-writer" },
  "curator-semaphore-v2": { library: "curator", waitPolicy: "predecessor" },
  "curator-leader-latch": { library: "curator", waitPolicy: "predecessor" },
  "kazoo-lock": { library: "kazoo", waitPolicy: "predecessor" },
  "kazoo-semaphore": { library: "kazoo", waitPolicy: "predecessor" },
  "npm-zk-lock": { library: "zk-lock", waitPolicy: "children" },
  "generic-sequential": { library: "generic", waitPolicy: "predecessor" },
};

const INT_MIN = -2147483648;
const INT_MAX = 2147483647;

/**
 * The server appends `String.format("%010d", parentCversion)`: ten digits, or after the int counter overflows a
 * minus sign and nine digits (`-000000001`) or ten (`-2147483648`). Parses exactly that and nothing else.
 */
export function parseSequence(text: string): number | null {
  if (!/^(?:\d{10}|-\d{9,10})$/.test(text)) return null;
  const n = Number(text);
  if (n < INT_MIN || n > INT_MAX) return null;
  // "-0123456789" would need a leading zero after the sign, which %010d never writes for 10-digit magnitudes.
  if (text.length === 11 && text[1] === "0") return null;
  return n;
}

/**
 * Splits a name of unknown format into prefix and sequence. When the text before ten trailing digits is "-", the
 * name is read as "prefix ending in -" plus a positive sequence (the common `lock-0000000001`), except for the one
 * value a positive int cannot have (`-2147483648`).
 */
export function splitSequence(name: string): { prefix: string; sequence: number } | null {
  const ten = /(\d{10})$/.exec(name);
  if (ten) {
    const v = Number(ten[1]);
    if (v <= INT_MAX) return { prefix: name.slice(0, -10), sequence: v };
    if (v === 2147483648 && name.endsWith("-2147483648")) return { prefix: name.slice(0, -11), sequence: INT_MIN };
    return null;
  }
  const neg = /(-\d{9})$/.exec(name);
  if (neg) return { prefix: name.slice(0, -10), sequence: Number(neg[1]) };
  return null;
}

export interface ChildRecognition {
  recipe: RecipeId;
  library: string;
  /** The rule that matched, shown to operators. */
  rule: string;
  mode: ContenderMode;
  sequence: number;
  /** An identity the name itself carries: Curator's protection UUID, kazoo's hex id, WriteLock's session id. */
  nameId?: string;
}

const SEQ = "(-?\\d{9,10})";
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

interface NameRule {
  rule: string;
  recipe: RecipeId;
  re: RegExp;
  mode: (m: RegExpExecArray) => ContenderMode;
  nameId?: (m: RegExpExecArray) => string;
  /** Names shared by two libraries are told apart by the node's data; null data means "not read yet". */
  dataTest?: (data: Buffer | null) => boolean;
}

const CURATOR_KINDS: Record<string, { recipe: RecipeId; mode: ContenderMode }> = {
  "-lock-": { recipe: "curator-mutex", mode: "exclusive" },
  "-__READ__": { recipe: "curator-rwlock", mode: "read" },
  "-__WRIT__": { recipe: "curator-rwlock", mode: "write" },
  "-lease-": { recipe: "curator-semaphore-v2", mode: "lease" },
  "-latch-": { recipe: "curator-leader-latch", mode: "latch" },
};

/** Curator writes the client's IP address as the default node data. */
export function looksLikeIpAddress(data: Buffer | null): boolean {
  if (!data || data.length === 0 || data.length > 45) return false;
  const s = data.toString("latin1");
  if (/^\d{1,3}(?:\.\d{1,3}){3}$/.test(s)) return s.split(".").every((o) => Number(o) <= 255);
  // Java's getHostAddress() for IPv6: full groups, optionally a %zone.
  return /^[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7}(?:%[\w.-]{1,32})?$/.test(s);
}

/** Most specific first. */
const NAME_RULES: readonly NameRule[] = [
  ...Object.entries(CURATOR_KINDS).map(([infix, k]): NameRule => ({
    rule: `curator _c_<uuid>${infix}<seq>`,
    recipe: k.recipe,
    re: new RegExp(`^_c_(${UUID})${infix}${SEQ}$`),
    mode: () => k.mode,
    nameId: (m) => m[1]!,
  })),
  {
    rule: "kazoo <32hex>__lock__<seq>",
    recipe: "kazoo-lock",
    re: new RegExp(`^([0-9a-f]{32})__lock__${SEQ}$`),
    mode: () => "exclusive",
    nameId: (m) => m[1]!,
  },
  {
    rule: "kazoo <32hex>__rlock__<seq>",
    recipe: "kazoo-lock",
    re: new RegExp(`^([0-9a-f]{32})__rlock__${SEQ}$`),
    mode: () => "read",
    nameId: (m) => m[1]!,
  },
  {
    rule: "zookeeper WriteLock x-<sessionId>-<seq>",
    recipe: "zookeeper-write-lock",
    re: new RegExp(`^x-(-?\\d{1,20})-${SEQ}$`),
    mode: () => "exclusive",
    nameId: (m) => m[1]!,
  },
  { rule: "seeds Lock<seq>", recipe: "seeds-parent-lock", re: new RegExp(`^Lock${SEQ}$`), mode: () => "exclusive" },
  {
    rule: "zk-lock lock-<seq> with data 'lock'",
    recipe: "npm-zk-lock",
    re: new RegExp(`^lock-${SEQ}$`),
    mode: () => "exclusive",
    dataTest: (d) => d !== null && d.toString("latin1") === "lock",
  },
  {
    rule: "curator lock-<seq> (unprotected) with an IP address as data",
    recipe: "curator-mutex",
    re: new RegExp(`^lock-${SEQ}$`),
    mode: () => "exclusive",
    dataTest: looksLikeIpAddress,
  },
  {
    rule: "zookeeper docs [<guid>-]lock-<seq>",
    recipe: "zookeeper-docs-lock",
    re: new RegExp(`^(?:(.+)-)?lock-${SEQ}$`),
    mode: () => "exclusive",
    nameId: (m) => m[1] ?? "",
  },
  {
    rule: "zookeeper docs [<guid>-]read-<seq> / write-<seq>",
    recipe: "zookeeper-docs-lock",
    re: new RegExp(`^(?:(.+)-)?(read|write)-${SEQ}$`),
    mode: (m) => (m[2] === "read" ? "read" : "write"),
    nameId: (m) => m[1] ?? "",
  },
];

/**
 * Recognises one child of a lock parent. `data` is the node's content when it has been read (null otherwise):
 * only names that two libraries share need it. Returns null for names without a ZooKeeper sequence suffix.
 */
export function recogniseChild(name: string, data: Buffer | null = null): ChildRecognition | null {
  for (const r of NAME_RULES) {
    const m = r.re.exec(name);
    if (!m) continue;
    const sequence = parseSequence(m[m.length - 1]!);
    if (sequence === null) continue;
    if (r.dataTest && !r.dataTest(data)) continue;
    const hit: ChildRecognition = {
      recipe: r.recipe,
      library: RECIPES[r.recipe].library,
      rule: r.rule,
      mode: r.mode(m),
      sequence,
    };
    const id = r.nameId?.(m);
    if (id) hit.nameId = id;
    return hit;
  }
  const split = splitSequence(name);
  if (!split) return null;
  return {
    recipe: "generic-sequential",
    library: "generic",
    rule: "generic <prefix><seq>",
    mode: "exclusive",
    sequence: split.sequence,
  };
}

const SPECIFICITY: readonly RecipeId[] = [
  "curator-rwlock",
  "curator-semaphore-v2",
  "curator-leader-latch",
  "curator-mutex",
  "kazoo-lock",
  "zookeeper-write-lock",
  "seeds-parent-lock",
  "npm-zk-lock",
  "zookeeper-docs-lock",
  "generic-sequential",
];

/** The recipe a parent's queue follows: the most common among its contenders, ties to the more specific. */
export function dominantRecipe(recognised: ReadonlyArray<Pick<ChildRecognition, "recipe">>): RecipeId | null {
  if (recognised.length === 0) return null;
  const counts = new Map<RecipeId, number>();
  for (const r of recognised) counts.set(r.recipe, (counts.get(r.recipe) ?? 0) + 1);
  return [...counts.entries()].sort(
    (a, b) => b[1] - a[1] || SPECIFICITY.indexOf(a[0]) - SPECIFICITY.indexOf(b[0]),
  )[0]![0];
}

/** kazoo's semaphore keeps its queue in a sibling named `<path>-__lock__` and its holders as `<32 hex>` children. */
export const KAZOO_SEMAPHORE_QUEUE_SUFFIX = "-__lock__";
const KAZOO_HOLDER = /^[0-9a-f]{32}$/;

export function isKazooSemaphoreHolderName(name: string): boolean {
  return KAZOO_HOLDER.test(name);
}

/** kazoo stores max_leases as the semaphore node's data, in decimal. */
export function parseKazooMaxLeases(data: Buffer | null): number | null {
  if (!data) return null;
  const s = data.toString("latin1").trim();
  if (!/^\d{1,9}$/.test(s)) return null;
  const n = Number(s);
  return n >= 1 ? n : null;
}

/** What a node is, judged from its children's names (phase one of discovery: no data read yet). */
export type ParentShape =
  | { shape: "queue"; recipe: RecipeId; rule: string; sequential: number; total: number }
  /** Children named only `leases`/`locks`: confirm with confirmCuratorSemaphore before believing it. */
  | { shape: "curator-semaphore-v2-candidate"; rule: string }
  | { shape: "kazoo-semaphore"; rule: string }
  | { shape: "none" };

/**
 * Decides whether a node is a lock parent from its children's names. `siblings` (its own parent's children) lets a
 * kazoo semaphore be told from any directory of hex-named nodes. A node with no children is "none": an empty lock
 * parent looks exactly like any other empty node.
 */
export function recogniseParent(
  name: string,
  children: readonly string[],
  siblings: readonly string[] = [],
): ParentShape {
  if (children.length === 0) return { shape: "none" };
  if (children.every((c) => c === "leases" || c === "locks")) {
    return { shape: "curator-semaphore-v2-candidate", rule: "curator semaphore v2: children 'leases' and 'locks'" };
  }
  if (siblings.includes(`${name}${KAZOO_SEMAPHORE_QUEUE_SUFFIX}`) && children.every(isKazooSemaphoreHolderName)) {
    return { shape: "kazoo-semaphore", rule: "kazoo semaphore: <32hex> children and a sibling <path>-__lock__" };
  }
  const recognised: ChildRecognition[] = [];
  for (const c of children) {
    const r = recogniseChild(c);
    if (r) recognised.push(r);
  }
  // Most children must look like contenders: a directory of mostly other names that happens to hold one
  // sequential node is not a lock.
  if (recognised.length === 0 || recognised.length * 2 < children.length) return { shape: "none" };
  const recipe = dominantRecipe(recognised)!;
  const rule = recognised.find((r) => r.recipe === recipe)!.rule;
  return { shape: "queue", recipe, rule, sequential: recognised.length, total: children.length };
}

/**
 * A directory holding only `locks` is everywhere (`/locks/...` is the usual home of every lock library), and a Curator
 * mutex at `<app>/locks` looks the same from above. It is a Curator semaphore v2 only when its `leases` directory
 * holds a lease, or when both `leases` and `locks` are there.
 */
export function confirmCuratorSemaphore(children: readonly string[], leases: readonly string[] | null): boolean {
  if (!children.every((c) => c === "leases" || c === "locks")) return false;
  if (children.includes("leases") && children.includes("locks")) return true;
  return (leases ?? []).some((n) => recogniseChild(n)?.recipe === "curator-semaphore-v2");
}

/** Single-node locks (`/product-lock-42`, EPHEMERAL, not sequential) are found by name: ephemeral nodes abound. */
export function looksLikeSimpleLockName(name: string): boolean {
  return /lock|mutex/i.test(name) && splitSequence(name) === null;
}
