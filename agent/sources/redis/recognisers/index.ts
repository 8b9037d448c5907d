import type { KeySample } from "../redis-port";
import { genericAny, genericHash, genericString, genericZset } from "./generic";
import type { Recogniser, Recognition } from "./types";

export type { Recogniser, Recognition } from "./types";

/** Most specific first; the generic rules last, and genericAny always answers. */
export const RECOGNISERS: readonly Recogniser[] = [genericString, genericHash, genericZset, genericAny];

export function recognise(sample: KeySample, nowMs: number, recognisers = RECOGNISERS): Recognition {
  const keyText = sample.key.toString("utf8");
  for (const r of recognisers) {
    try {
      const hit = r.recognise(sample, keyText, nowMs);
      if (hit) return hit;
    } catch {
      // A recogniser that chokes on a hostile value must not take the others down: fall through to the next.
    }
  }
  return genericAny.recognise(sample, keyText, nowMs)!;
}
