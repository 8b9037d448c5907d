import type { Hazard, LockHolder, LockHolding, Waiter } from "../../../../lib/contract/lock";
import type { KeySample } from "../redis-port";

/** What a recogniser makes of one key. */
export interface Recognition {
  library: string;
  /** Names the rule that matched, shown to operators so a surprising label can be checked. */
  rule: string;
  owner: string | null;
  holder: LockHolder | null;
  waiters: Waiter[];
  hazards?: Hazard[];
  /** Formats with several holders by design (semaphore permits): each one read, with its own lease when known. */
  holders?: LockHolding[];
  /** The holder count when the read saw only part of them. */
  holdersTotal?: number;
}

/**
 * Facts the agent cannot read from Redis but an operator can configure. Optional: every recogniser works without
 * them and only says less.
 */
export interface RecognitionHints {
  /** redis-semaphore keeps its limit in the client, not in Redis: key text -> configured limit. */
  semaphoreLimits?: ReadonlyMap<string, number>;
}

/**
 * Companion keys read alongside a lock (see companionKeysFor), keyed by the companion key's text. A companion that
 * was read and does not exist is present with type "none" / pttl -2; a companion that was not read is absent.
 */
export type RelatedSamples = ReadonlyMap<string, KeySample>;

/** A pure function from one sampled key to a recognition, or null when the key is not of its format. */
export interface Recogniser {
  name: string;
  recognise(
    sample: KeySample,
    keyText: string,
    nowMs: number,
    related: RelatedSamples,
    hints?: RecognitionHints,
  ): Recognition | null;
}
