import type { Lock } from "../../lib/contract/lock";

/**
 * `{ ...base, ...a, ...b }` for the objects the agent keeps per lock (the tracker's locks, their holders), built so
 * that objects of one shape share one hidden class. A spread site that has seen many shapes (locks of every
 * library and rule pass through the tracker's) makes V8 (Node 20) give every copy a hidden class and descriptor
 * array of its own: measured about 500 bytes a lock, 5 MB at 10,000 locks, with 9,918 distinct classes among them;
 * Object.assign onto a fresh literal shares them (and was faster in the same trial). `undefined` adds nothing.
 */
export function copyWith<T extends object, A extends object, B extends object = object>(
  base: T,
  a: A,
  b?: B,
): Omit<T, keyof A | keyof B> & A & B {
  return Object.assign({}, base, a, b);
}

/**
 * One empty list shared by every lock that has none (no waiters, no hazards, no renewals seen): at 100,000 locks a
 * new empty array each was 300,000 objects of 32 bytes (a heap snapshot, 2026-12-07), 10% of the agent's objects,
 * which the collector marks at every full collection. Frozen: code that pushed into it would throw rather than change
 * every lock at once (lists are replaced, never changed in place).
 */
export function none<T>(): T[] {
  return NONE as unknown as T[];
}
const NONE: readonly never[] = Object.freeze([]);

/** Fields of a Lock that only some locks have; they are added when present (`holders` only for semaphores, ...). */
type RareField = "holders" | "holdersTotal" | "receivedAt" | "quorum" | "zookeeper" | "database";
type LockField = Exclude<keyof Lock, RareField>;

/**
 * copyWith for a tracked lock: the copy starts from one literal that already has the fields every lock has (an absent
 * fingerprint undefined, which JSON leaves out), so they sit inside the object. From an empty object only the first
 * four did, and the rest went to a separate property array of each lock (13 MB at 100,000 locks in a heap
 * snapshot, 2026-12-06; 32 bytes a lock more than the fields inside it, and one more object for the collector).
 */
export function copyLockWith<T extends object, A extends object, B extends object = object>(
  base: T,
  a: A,
  b?: B,
): Omit<T, keyof A | keyof B> & A & B {
  return Object.assign(lockFields(), base, a, b) as Omit<T, keyof A | keyof B> & A & B;
}

/** The fields every lock has (ownerFingerprint nearly every one), in the order sources build them. */
function lockFields(): { [K in LockField]: undefined } {
  return {
    id: undefined,
    backend: undefined,
    source: undefined,
    resource: undefined,
    owner: undefined,
    ownerFingerprint: undefined,
    library: undefined,
    rule: undefined,
    ttlMs: undefined,
    holder: undefined,
    waiters: undefined,
    since: undefined,
    observedAt: undefined,
    kind: undefined,
    valuePreview: undefined,
    hazards: undefined,
    agentId: undefined,
  };
}
