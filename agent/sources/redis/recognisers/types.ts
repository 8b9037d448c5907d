import type { Hazard, LockHolder, Waiter } from "../../../../lib/contract/lock";
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
}

/** A pure function from one sampled key to a recognition, or null when the key is not of its format. */
export interface Recogniser {
  name: string;
  recognise(sample: KeySample, keyText: string, nowMs: number): Recognition | null;
}
