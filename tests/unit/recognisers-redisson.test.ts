import { describe, expect, it } from "vitest";
import type { KeySample } from "../../agent/sources/redis/redis-port";
import { recognise, type Recognition } from "../../agent/sources/redis/recognisers";
import { CLIENT_A, CLIENT_B, gone, hash, list, NOW, related, str, zset } from "./recognisers-fixtures";

const A1 = `${CLIENT_A}:1`;
const B77 = `${CLIENT_B}:77`;
const B78 = `${CLIENT_B}:78`;
const NON_EXPIRABLE = 922337203685477;

interface Case {
  name: string;
  sample: KeySample;
  related?: Map<string, KeySample>;
  want: Partial<Recognition>;
  hazards?: string[];
}

function run(cases: Case[]) {
  for (const c of cases) {
    it(c.name, () => {
      const got = recognise(c.sample, NOW, c.related ?? new Map());
      expect(got).toMatchObject(c.want);
      expect((got.hazards ?? []).map((h) => h.code).sort()).toEqual((c.hazards ?? []).sort());
    });
  }
}

describe("Redisson RLock", () => {
  run([
    {
      name: "held once by thread 1, watchdog lease",
      sample: hash("order:1", [[A1, "1"]], 29_876),
      want: {
        library: "redisson",
        rule: "redisson-lock",
        owner: A1,
        holder: { clientId: CLIENT_A, thread: 1, reentrant: 1 },
        waiters: [],
      },
    },
    {
      name: "re-entered 3 times by a thread with the largest Java long id (kept as digits)",
      sample: hash("order:1", [[`${CLIENT_A}:9223372036854775807`, "3"]]),
      want: { rule: "redisson-lock", holder: { clientId: CLIENT_A, thread: "9223372036854775807", reentrant: 3 } },
    },
    {
      name: "negative thread id (it is a Java long) still parses",
      sample: hash("order:1", [[`${CLIENT_A}:-5`, "1"]]),
      want: { rule: "redisson-lock", holder: { thread: -5 } },
    },
    {
      name: "no TTL: watchdog never set one or a crashed lock() persisted it",
      sample: hash("order:1", [[A1, "1"]], -1),
      want: { rule: "redisson-lock" },
      hazards: ["redisson-no-lease"],
    },
    {
      name: "runaway re-entry count",
      sample: hash("order:1", [[A1, "2147483647"]]),
      want: { rule: "redisson-lock", holder: { reentrant: 2147483647 } },
      hazards: ["redisson-reentry-runaway"],
    },
    {
      name: "count beyond any integer: kept raw, flagged",
      sample: hash("order:1", [[A1, "99999999999999999999999"]]),
      want: { rule: "redisson-lock", holder: { reentrantRaw: "99999999999999999999999" } },
      hazards: ["redisson-malformed-count"],
    },
    {
      name: "count NaN",
      sample: hash("order:1", [[A1, "NaN"]]),
      want: { rule: "redisson-lock" },
      hazards: ["redisson-malformed-count"],
    },
    {
      name: "count negative",
      sample: hash("order:1", [[A1, "-1"]]),
      want: { rule: "redisson-lock" },
      hazards: ["redisson-malformed-count"],
    },
    {
      name: "two exclusive holders at once",
      sample: hash("order:1", [
        [A1, "1"],
        [B77, "1"],
      ]),
      want: { rule: "redisson-lock", owner: B77, holder: { holders: 2 } },
      hazards: ["redisson-multiple-holders"],
    },
    {
      name: "a Redisson-like field next to an application field: an application hash",
      sample: hash("user:1", [
        [A1, "1"],
        ["name", "ann"],
      ]),
      want: { library: "generic", rule: "generic-hash-field" },
    },
    {
      name: "upper-case UUID (Java's toString is lower case): not Redisson",
      sample: hash("order:1", [[`${CLIENT_A.toUpperCase()}:1`, "1"]]),
      want: { library: "generic" },
    },
    {
      name: "write field without mode: not a plain lock",
      sample: hash("order:1", [[`${A1}:write`, "1"]]),
      want: { library: "generic" },
    },
    {
      name: "companions read and absent: a plain lock",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(gone("redisson_lock_queue:{order:1}"), gone("redisson_lock_timeout:{order:1}")),
      want: { rule: "redisson-lock" },
    },
  ]);
});

describe("Redisson RFairLock", () => {
  run([
    {
      name: "two waiters in FIFO order with deadlines",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        list("redisson_lock_queue:{order:1}", [B77, B78]),
        zset("redisson_lock_timeout:{order:1}", [
          [B77, NOW + 300_000],
          [B78, NOW + 600_000],
        ]),
      ),
      want: {
        library: "redisson",
        rule: "redisson-fair-lock",
        owner: A1,
        holder: { clientId: CLIENT_A, thread: 1, reentrant: 1, fair: true, queued: 2 },
        waiters: [
          { owner: B77, detail: `deadline 2024-05-01T10:05:00.000Z; client ${CLIENT_B} thread 77` },
          { owner: B78, detail: `deadline 2024-05-01T10:10:00.000Z; client ${CLIENT_B} thread 78` },
        ],
      },
    },
    {
      name: "a waiter past its deadline",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        list("redisson_lock_queue:{order:1}", [B77]),
        zset("redisson_lock_timeout:{order:1}", [[B77, NOW - 60_000]]),
      ),
      want: {
        rule: "redisson-fair-lock",
        waiters: [{ owner: B77, detail: `deadline 2024-05-01T09:59:00.000Z (passed); client ${CLIENT_B} thread 77` }],
      },
      hazards: ["fair-lock-waiter-expired"],
    },
    {
      name: "within the clock-skew grace: not overdue",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        list("redisson_lock_queue:{order:1}", [B77]),
        zset("redisson_lock_timeout:{order:1}", [[B77, NOW - 500]]),
      ),
      want: { rule: "redisson-fair-lock" },
    },
    {
      name: "queue gone, deadlines left: waiters from the deadline set",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        gone("redisson_lock_queue:{order:1}"),
        zset("redisson_lock_timeout:{order:1}", [[B78, NOW + 1000]]),
      ),
      want: { rule: "redisson-fair-lock", holder: { queued: 1 }, waiters: [{ owner: B78 }] },
    },
    {
      name: "NaN and infinite deadlines are unreadable, not overdue",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        list("redisson_lock_queue:{order:1}", [B77, B78]),
        zset("redisson_lock_timeout:{order:1}", [
          [B77, Number.NaN],
          [B78, Number.NEGATIVE_INFINITY],
        ]),
      ),
      want: {
        waiters: [
          { owner: B77, detail: `deadline unreadable; client ${CLIENT_B} thread 77` },
          { owner: B78, detail: `deadline unreadable; client ${CLIENT_B} thread 78` },
        ],
      },
    },
    {
      name: "queued thread without a deadline entry, and a garbage queue entry",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        list("redisson_lock_queue:{order:1}", [B77, Buffer.from([0xff, 0x00, 0x1b])]),
        zset("redisson_lock_timeout:{order:1}", []),
      ),
      want: {
        waiters: [
          { owner: B77, detail: `no deadline entry; client ${CLIENT_B} thread 77` },
          { owner: "\\xff\\x00\\x1b", detail: "no deadline entry" },
        ],
      },
    },
    {
      name: "long queue: head read, length reported",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        list("redisson_lock_queue:{order:1}", [B77], -1, 5000),
        zset("redisson_lock_timeout:{order:1}", [[B77, NOW + 1]], -1, 5000),
      ),
      want: { holder: { queued: 5000 } },
    },
    {
      name: "lock name with a hash tag: companions are prefix:name",
      sample: hash("{order}:1", [[A1, "1"]]),
      related: related(
        list("redisson_lock_queue:{order}:1", [B77]),
        zset("redisson_lock_timeout:{order}:1", [[B77, NOW + 1]]),
      ),
      want: { rule: "redisson-fair-lock", waiters: [{ owner: B77 }] },
    },
    {
      name: "companion of the wrong type (queue is a string): ignored, waiters from the deadline set",
      sample: hash("order:1", [[A1, "1"]]),
      related: related(
        str("redisson_lock_queue:{order:1}", "oops"),
        zset("redisson_lock_timeout:{order:1}", [[B77, NOW + 1]]),
      ),
      want: { rule: "redisson-fair-lock", waiters: [{ owner: B77 }] },
    },
  ]);
});

describe("Redisson RReadWriteLock", () => {
  const rw = (n: number, name = "cfg", client = CLIENT_A, tid = 1) => `{${name}}:${client}:${tid}:rwlock_timeout:${n}`;
  run([
    {
      name: "read-locked by two threads, one of them twice",
      sample: hash("cfg", [
        ["mode", "read"],
        [A1, "2"],
        [B77, "1"],
      ]),
      related: related(str(rw(1), "1", 25_000), str(rw(2), "1", 28_000), str(rw(1, "cfg", CLIENT_B, 77), "1", 12_000)),
      want: {
        library: "redisson",
        rule: "redisson-rwlock-read",
        owner: `${B77} (+1 readers)`,
        holder: { mode: "read", readers: 2, holds: 3, shortestHoldTtlMs: 12_000 },
      },
    },
    {
      name: "single reader: its client and thread",
      sample: hash("cfg", [
        ["mode", "read"],
        [A1, "1"],
      ]),
      want: {
        rule: "redisson-rwlock-read",
        owner: A1,
        holder: { mode: "read", readers: 1, holds: 1, clientId: CLIENT_A, thread: 1, reentrant: 1 },
      },
    },
    {
      name: "a read hold whose lease key is gone",
      sample: hash("cfg", [
        ["mode", "read"],
        [A1, "2"],
      ]),
      related: related(str(rw(1), "1", 25_000), gone(rw(2))),
      want: { rule: "redisson-rwlock-read" },
      hazards: ["rwlock-read-hold-expired"],
    },
    {
      name: "write-locked",
      sample: hash("cfg", [
        ["mode", "write"],
        [`${A1}:write`, "1"],
      ]),
      want: {
        rule: "redisson-rwlock-write",
        owner: `${A1}:write`,
        holder: { mode: "write", clientId: CLIENT_A, thread: 1, reentrant: 1 },
      },
    },
    {
      name: "writer that also took read holds",
      sample: hash("cfg", [
        ["mode", "write"],
        [`${A1}:write`, "2"],
        [A1, "3"],
      ]),
      want: { rule: "redisson-rwlock-write", holder: { mode: "write", reentrant: 2, readHoldsOfWriter: 3 } },
    },
    {
      name: "write mode without a writer field",
      sample: hash("cfg", [
        ["mode", "write"],
        [A1, "1"],
      ]),
      want: { rule: "redisson-rwlock-write", owner: null },
      hazards: ["redisson-rwlock-malformed"],
    },
    {
      name: "rwlock without TTL",
      sample: hash(
        "cfg",
        [
          ["mode", "write"],
          [`${A1}:write`, "1"],
        ],
        -1,
      ),
      want: { rule: "redisson-rwlock-write" },
      hazards: ["redisson-no-lease"],
    },
    {
      name: "mode other than read/write: an application hash",
      sample: hash("cfg", [
        ["mode", "dark"],
        [A1, "1"],
      ]),
      want: { library: "generic" },
    },
    { name: "mode alone, no holder", sample: hash("cfg", [["mode", "read"]]), want: { library: "generic" } },
  ]);
});

describe("Redisson semaphores", () => {
  const id1 = Buffer.from("0123456789abcdef0123456789abcdef", "hex");
  const id2 = Buffer.from("fedcba9876543210fedcba9876543210", "hex");
  run([
    {
      name: "RPermitExpirableSemaphore: raw 16-byte permit ids, one leased, one without lease",
      sample: str("pool", "2", -1),
      related: related(
        zset("{pool}:timeout", [
          [id1, NOW + 30_000],
          [id2, NON_EXPIRABLE],
        ]),
      ),
      want: {
        library: "redisson",
        rule: "redisson-permit-expirable-semaphore",
        owner: "0123456789abcdef0123456789abcdef",
        holder: {
          permitsFree: 2,
          permitsHeld: 2,
          permitsTotal: 4,
          permitsWithoutLease: 1,
          nextLeaseEnds: "2024-05-01T10:00:30.000Z",
        },
        // each leased permit is a holder: its lease ends at its score; a permit without lease never expires
        holders: [
          { owner: "0123456789abcdef0123456789abcdef", ttlMs: 30_000 },
          { owner: "fedcba9876543210fedcba9876543210", ttlMs: null },
        ],
      },
    },
    {
      name: "permit ids stored as hex text (older releases, unverified)",
      sample: str("pool", "0", -1),
      related: related(zset("{pool}:timeout", [["0123456789abcdef0123456789abcdef", NOW + 1000]])),
      want: { rule: "redisson-permit-expirable-semaphore", owner: "0123456789abcdef0123456789abcdef" },
    },
    {
      name: "expired leases still counted as held",
      sample: str("pool", "0", -1),
      related: related(zset("{pool}:timeout", [[id1, NOW - 1000]])),
      want: { holder: { permitsExpired: 1, permitsHeld: 1, permitsFree: 0 } },
      hazards: ["semaphore-expired-permits"],
    },
    {
      name: "negative free permits: over-subscribed",
      sample: str("pool", "-1", -1),
      related: related(zset("{pool}:timeout", [[id1, NOW + 1000]])),
      want: { holder: { permitsFree: -1, permitsTotal: 0 } },
      hazards: ["semaphore-over-subscribed"],
    },
    {
      name: "NaN lease score: skipped",
      sample: str("pool", "1", -1),
      related: related(zset("{pool}:timeout", [[id1, Number.NaN]])),
      want: { rule: "redisson-permit-expirable-semaphore", holder: { permitsHeld: 1 } },
    },
    {
      name: "integer without the lease set: generic integer token (RSemaphore or SETNX 1 cannot be told apart)",
      sample: str("parking", "3", -1),
      related: related(gone("{parking}:timeout")),
      want: { library: "generic", rule: "integer-token", holder: { value: 3 } },
    },
    {
      name: "lease set of the wrong type",
      sample: str("pool", "2", -1),
      related: related(str("{pool}:timeout", "x")),
      want: { library: "generic", rule: "integer-token" },
    },
  ]);
});
