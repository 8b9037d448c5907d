import { escapeBytes } from "../../../core/escape";
import { ascii, isUuid4, owner, wholeString } from "./shapes";
import type { Recogniser } from "./types";

/*
 * Spring Integration's RedisLockRegistry: key `<registryKey>:<path>`, value the registry instance's clientId
 * (one UUID.randomUUID() per registry, shared by all of its locks), always with PX expireAfter (60 000 by
 * default), renewed by the same script.
 *   GET orders-registry:order/42 -> "e58ed763-928c-4155-bee9-fdbaaadc15f3"
 * A UUIDv4 is also the textbook Java token, so this is a guess: it needs the `<registryKey>:<path>` shape and a
 * TTL (Spring never writes a lock without one); anything else with a UUIDv4 stays generic.
 */

export const RULE_SPRING = "uuid4-registry-key-guess";

export const springRedisLockRegistry: Recogniser = {
  name: "spring-redis-lock-registry",
  recognise(sample) {
    const whole = wholeString(sample);
    const t = whole ? ascii(whole, 36) : null;
    if (t === null || !isUuid4(t) || sample.pttl < 0) return null;
    const colon = sample.key.indexOf(0x3a);
    if (colon <= 0 || colon >= sample.key.length - 1) return null;
    return {
      library: "spring-integration",
      rule: RULE_SPRING,
      owner: owner(whole!),
      holder: {
        clientId: t,
        registryKey: escapeBytes(sample.key.subarray(0, colon), 64),
        path: escapeBytes(sample.key.subarray(colon + 1), 128),
      },
      waiters: [],
    };
  },
};
