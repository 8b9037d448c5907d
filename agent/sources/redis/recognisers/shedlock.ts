import type { LockHolder } from "../../../../lib/contract/lock";
import { escapeBytes, escapeText } from "../../../core/escape";
import { isoOrNull, owner, uuidVersion, wholeString } from "./shapes";
import type { Recogniser } from "./types";

/*
 * ShedLock's Redis providers (RedisLockProvider for Spring Data, Jedis, reactive): the key is
 * `<keyPrefix>:<env>:<lockName>` (keyPrefix "job-lock", env "default" unless configured), the value
 * `ADDED:<ISO instant>@<hostname>`, newer versions `ADDED:<ISO instant>@<hostname>:<uuid>`; PX = lockAtMostFor.
 * On unlock before lockAtLeastFor the value is rewritten (SET XX PX remaining) with a fresh time.
 *   GET job-lock:default:reportJob -> "ADDED:2024-05-01T10:00:00.123Z@worker-7:0f8fad5b-d9cb-469f-a165-70867728950e"
 */

export const RULE_SHEDLOCK = "shedlock-value";

const VALUE_RE =
  /^ADDED:([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:?[0-9]{2}))@(.*)$/s;
const MAX_VALUE = 1024;

export const shedlock: Recogniser = {
  name: "shedlock",
  recognise(sample) {
    const whole = wholeString(sample);
    if (!whole || whole.length > MAX_VALUE || whole.subarray(0, 6).toString("latin1") !== "ADDED:") return null;
    const value = whole.toString("utf8");
    const m = VALUE_RE.exec(value);
    if (!m) return null;
    let host = m[2]!;
    const holder: LockHolder = {};
    const tail = /^(.*):([0-9a-f-]{36})$/s.exec(host);
    if (tail && uuidVersion(tail[2]!) !== null) {
      host = tail[1]!;
      holder.instanceId = tail[2]!;
    }
    holder.host = escapeText(host, 96);
    const acquired = isoOrNull(Date.parse(m[1]!));
    if (acquired) holder.acquiredAt = acquired;
    // `<prefix>:<env>:<name>`: env and name as the scheduler knows them (the name may itself contain colons).
    const key = sample.key;
    const c1 = key.indexOf(0x3a);
    const c2 = c1 > 0 ? key.indexOf(0x3a, c1 + 1) : -1;
    if (c2 > c1 && c2 < key.length - 1) {
      holder.env = escapeBytes(key.subarray(c1 + 1, c2), 64);
      holder.lockName = escapeBytes(key.subarray(c2 + 1), 128);
    }
    return { library: "shedlock", rule: RULE_SHEDLOCK, owner: owner(whole), holder, waiters: [] };
  },
};
