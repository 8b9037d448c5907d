import { ascii, isUuid4, owner, wholeString } from "./shapes";
import type { Recogniser } from "./types";

/*
 * pottery's Redlock (Python, pottery/redlock.py): key `redlock:<key>`, value str(uuid.uuid4()), SET NX PX
 * auto_release_time (10 s by default), the same value on every master.
 *   GET redlock:printer -> "7d444840-9dc0-11d1-b245-5ffdce74fad2"
 */

export const RULE_POTTERY = "pottery-redlock-key-uuid4";

const PREFIX = Buffer.from("redlock:");

export const pottery: Recogniser = {
  name: "pottery",
  recognise(sample) {
    const key = sample.key;
    if (key.length <= PREFIX.length || !key.subarray(0, PREFIX.length).equals(PREFIX)) return null;
    const whole = wholeString(sample);
    const t = whole ? ascii(whole, 36) : null;
    if (t === null || !isUuid4(t)) return null;
    return { library: "pottery", rule: RULE_POTTERY, owner: owner(whole!), holder: null, waiters: [] };
  },
};
