import { describe, expect, it } from "vitest";
import type { KeySample } from "../../agent/sources/redis/redis-port";
import {
  companionKeysFor,
  companionOwner,
  parsePubsubNumsub,
  pubsubChannelFor,
  recognise,
  withSubscriberHint,
  type Recognition,
} from "../../agent/sources/redis/recognisers";
import { prefixName, suffixName } from "../../agent/sources/redis/recognisers/redisson-names";
import { CLIENT_A, CLIENT_B, hash, HEX32, NOW, str, UUID4, zset } from "./recognisers-fixtures";

const A1 = `${CLIENT_A}:1`;

describe("companionKeysFor", () => {
  const cases: Array<{ name: string; key?: string; sample: KeySample; want: string[] }> = [
    {
      name: "Redisson lock: fair-lock queue and deadlines",
      sample: hash("order:1", [[A1, "1"]]),
      want: ["redisson_lock_queue:{order:1}", "redisson_lock_timeout:{order:1}"],
    },
    {
      name: "name with a hash tag keeps it",
      sample: hash("{order}:1", [[A1, "1"]]),
      want: ["redisson_lock_queue:{order}:1", "redisson_lock_timeout:{order}:1"],
    },
    {
      name: "read/write lock: one lease key per read hold",
      sample: hash("cfg", [
        ["mode", "read"],
        [A1, "2"],
        [`${CLIENT_B}:7`, "1"],
      ]),
      want: [`{cfg}:${A1}:rwlock_timeout:1`, `{cfg}:${A1}:rwlock_timeout:2`, `{cfg}:${CLIENT_B}:7:rwlock_timeout:1`],
    },
    {
      name: "write-locked: the writer field has no lease keys",
      sample: hash("cfg", [
        ["mode", "write"],
        [`${A1}:write`, "1"],
      ]),
      want: [],
    },
    { name: "integer string: permit-expirable lease set", sample: str("pool", "3", -1), want: ["{pool}:timeout"] },
    { name: "integer string with a hash tag", sample: str("{pool}", "3", -1), want: ["{pool}:timeout"] },
    { name: "token string: nothing", sample: str("lock", HEX32), want: [] },
    { name: "application hash: nothing", sample: hash("user:1", [["name", "ann"]]), want: [] },
    { name: "a companion has no companions", sample: zset("{pool}:timeout", []), want: [] },
    {
      name: "key that is not UTF-8: cannot be spelt back",
      sample: hash(Buffer.from([0x6c, 0xff]), [[A1, "1"]]),
      want: [],
    },
    { name: "hash type without hash body", sample: { key: Buffer.from("x"), type: "hash", pttl: 1 }, want: [] },
  ];
  for (const c of cases) {
    it(c.name, () => expect(companionKeysFor(c.key ?? c.sample.key.toString("utf8"), c.sample)).toEqual(c.want));
  }

  it("re-entered a billion times: bounded per holder and overall", () => {
    const fields: Array<[string, string]> = [["mode", "read"]];
    for (let t = 0; t < 10; t++) fields.push([`${CLIENT_A}:${t}`, "1000000000"]);
    const keys = companionKeysFor("cfg", hash("cfg", fields));
    expect(keys.length).toBe(32);
    expect(keys.filter((k) => k.includes(`${CLIENT_A}:0:`)).length).toBe(8);
  });
});

describe("companionOwner", () => {
  const cases: Array<[string, string | null]> = [
    ["redisson_lock_queue:{order:1}", "order:1"],
    ["redisson_lock_timeout:{order:1}", "order:1"],
    ["redisson_lock_queue:{order}:1", "{order}:1"],
    [`{cfg}:${A1}:rwlock_timeout:3`, "cfg"],
    [`{app}:cfg:${A1}:rwlock_timeout:1`, "{app}:cfg"],
    [`redisson_unlock_latch:{order:1}:${HEX32}`, "order:1"],
    ["{pool}:timeout", "pool"],
    // Not Redisson's: a brace-less queue name, an application's ":timeout" key, ordinary keys.
    ["redisson_lock_queue:order", null],
    ["session:timeout", null],
    ["order:1", null],
    [`{cfg}:${A1}:rwlock_timeout:`, null],
    ["", null],
  ];
  for (const [key, want] of cases) it(JSON.stringify(key), () => expect(companionOwner(key)).toBe(want));

  for (const name of ["order:1", "x", "{order}:1", "a:{b}", "ключ", "🔒"]) {
    it(`reverses Redisson's naming for ${JSON.stringify(name)}`, () => {
      expect(companionOwner(prefixName("redisson_lock_queue", name))).toBe(name);
      expect(companionOwner(prefixName("redisson_lock_timeout", name))).toBe(name);
      expect(companionOwner(`${suffixName(name, A1)}:rwlock_timeout:1`)).toBe(name);
    });
  }
});

describe("pubsubChannelFor", () => {
  const rec = (sample: KeySample, related = new Map<string, KeySample>()): Recognition =>
    recognise(sample, NOW, related);
  const cases: Array<[string, string, Recognition, string | null]> = [
    ["RLock", "order:1", rec(hash("order:1", [[A1, "1"]])), "redisson_lock__channel:{order:1}"],
    ["RLock, hash-tagged name", "{order}:1", rec(hash("{order}:1", [[A1, "1"]])), "redisson_lock__channel:{order}:1"],
    [
      "read/write lock",
      "cfg",
      rec(
        hash("cfg", [
          ["mode", "read"],
          [A1, "1"],
        ]),
      ),
      "redisson_rwlock:{cfg}",
    ],
    ["integer string (maybe RSemaphore)", "parking", rec(str("parking", "3", -1)), "redisson_sc:{parking}"],
    [
      "fair lock: waiters are in the queue",
      "order:1",
      rec(
        hash("order:1", [[A1, "1"]]),
        new Map([["redisson_lock_timeout:{order:1}", zset("redisson_lock_timeout:{order:1}", [])]]),
      ),
      null,
    ],
    ["token lock", "lock", rec(str("lock", UUID4)), null],
  ];
  for (const [name, key, r, want] of cases) it(name, () => expect(pubsubChannelFor(key, r)).toBe(want));
});

describe("parsePubsubNumsub", () => {
  const cases: Array<[string, unknown, Array<[string, number]>]> = [
    [
      "ioredis flat array",
      ["redisson_lock__channel:{order:1}", 2, "redisson_sc:{pool}", 0],
      [
        ["redisson_lock__channel:{order:1}", 2],
        ["redisson_sc:{pool}", 0],
      ],
    ],
    [
      "Buffer names and string counts",
      [Buffer.from("a"), "3", Buffer.from("b"), Buffer.from("4")],
      [
        ["a", 3],
        ["b", 4],
      ],
    ],
    ["odd length: last name ignored", ["a", 1, "b"], [["a", 1]]],
    [
      "negative, NaN, fractional and huge counts skipped",
      ["a", -1, "b", Number.NaN, "c", 1.5, "d", "1e3", "e", 2 ** 60],
      [],
    ],
    ["non-string names skipped", [42, 1, null, 2, {}, 3], []],
    ["duplicate channel: the larger count", ["a", 1, "a", 5], [["a", 5]]],
    ["RESP3 map", new Map<unknown, unknown>([["a", 1]]), [["a", 1]]],
    ["plain object", { a: 7 }, [["a", 7]]],
    ["null", null, []],
    ["a string", "ERR unknown command", []],
    ["empty", [], []],
  ];
  for (const [name, reply, want] of cases) it(name, () => expect([...parsePubsubNumsub(reply)]).toEqual(want));
});

describe("withSubscriberHint", () => {
  it("adds the subscriber count of an RLock's channel as a waiter hint", () => {
    const r = recognise(hash("order:1", [[A1, "1"]]), NOW);
    const got = withSubscriberHint("order:1", r, new Map([["redisson_lock__channel:{order:1}", 2]]));
    expect(got.waiters).toEqual([
      {
        owner: "subscribers of redisson_lock__channel:{order:1}",
        detail: expect.stringContaining("2 client connection(s)"),
      },
    ]);
    expect(r.waiters).toEqual([]);
  });
  it("an integer string with waiting subscribers is a Redisson RSemaphore", () => {
    const r = recognise(str("parking", "0", -1), NOW);
    const got = withSubscriberHint("parking", r, new Map([["redisson_sc:{parking}", 1]]));
    expect(got).toMatchObject({
      library: "redisson",
      rule: "redisson-semaphore-confirmed-by-waiters",
      holder: { permitsFree: 0 },
      // the value counts free permits; it names no holder, so a change of it is not an owner change
      owner: null,
    });
    expect(got.waiters).toHaveLength(1);
  });
  it("negative free permits on a confirmed RSemaphore: over-subscribed", () => {
    const r = recognise(str("parking", "-2", -1), NOW);
    const got = withSubscriberHint("parking", r, new Map([["redisson_sc:{parking}", 1]]));
    expect(got.hazards?.map((h) => h.code)).toEqual(["semaphore-over-subscribed"]);
  });
  it("no subscribers, or a count that is not a count: unchanged", () => {
    const r = recognise(str("parking", "3", -1), NOW);
    expect(withSubscriberHint("parking", r, new Map([["redisson_sc:{parking}", 0]]))).toBe(r);
    expect(withSubscriberHint("parking", r, new Map([["redisson_sc:{parking}", Number.NaN]]))).toBe(r);
    expect(withSubscriberHint("parking", r, new Map())).toBe(r);
  });
  it("escapes a hostile channel name", () => {
    const key = "\u202Eorder";
    const r = recognise(hash(key, [[A1, "1"]]), NOW);
    const got = withSubscriberHint(key, r, new Map([[`redisson_lock__channel:{${key}}`, 1]]));
    expect(got.waiters[0]!.owner).toBe("subscribers of redisson_lock__channel:{\\u{202e}order}");
  });
});
