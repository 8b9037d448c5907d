import { describe, expect, it } from "vitest";
import { bcastPrefixes, literalPrefix } from "../../agent/sources/redis/bcast-prefixes";
import { DeadlineHeap } from "../../agent/core/deadline-heap";
import { CommandCosts, parseCommandStats, ServerTimeBudget } from "../../agent/sources/redis/server-time-budget";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";

describe("literalPrefix", () => {
  it.each([
    ["mutex:*", "mutex:"],
    ["semaphore:*", "semaphore:"],
    ["*[lL][oO][cC][kK]*", ""],
    ["job-lock:prod:?", "job-lock:prod:"],
    ["lock\\*:*", "lock"],
    ["exact-name", "exact-name"],
    ["", ""],
  ])("%s -> %s", (pattern, prefix) => expect(literalPrefix(pattern)).toBe(prefix));
});

describe("bcastPrefixes", () => {
  it("takes the literal prefixes of the default patterns and leaves the wildcard ones to SCAN", () => {
    expect(bcastPrefixes(DEFAULT_LOCK_PATTERNS)).toEqual(["mutex:", "semaphore:"]);
  });

  it("never registers two overlapping prefixes (the server refuses them) and drops very short ones", () => {
    expect(bcastPrefixes(["mutex:a*", "mutex:*", "mutex:ab?", "lo*", "l*", "*x"])).toEqual(["mutex:"]);
    expect(bcastPrefixes(["lock:orders:*", "lock:users:*", "lock:*"])).toEqual(["lock:"]);
    expect(bcastPrefixes(["lock:orders:*", "lock:users:*"])).toEqual(["lock:users:", "lock:orders:"]);
    expect(bcastPrefixes([])).toEqual([]);
  });
});

describe("DeadlineHeap", () => {
  it("pops due entries earliest first and keeps later ones", () => {
    const h = new DeadlineHeap();
    const deadlines = [50, 10, 40, 30, 20, 60, 5, 45];
    deadlines.forEach((d, i) => h.push(d, `k${i}`));
    expect(h.peek()).toBe(5);
    expect(h.popDue(40).map((e) => e.atMs)).toEqual([5, 10, 20, 30, 40]);
    expect(h.size).toBe(3);
    expect(h.peek()).toBe(45);
    expect(h.popDue(1000).map((e) => e.key)).toEqual(["k7", "k0", "k5"]);
    expect(h.peek()).toBeNull();
  });

  it("pops at most a limit of due entries, earliest first, and leaves the rest due", () => {
    const h = new DeadlineHeap();
    [30, 10, 20, 40, 5].forEach((d, i) => h.push(d, `k${i}`));
    expect(h.popDue(30, 2).map((e) => e.atMs)).toEqual([5, 10]);
    expect(h.popDue(30, 2).map((e) => e.atMs)).toEqual([20, 30]);
    expect(h.popDue(30, 2)).toEqual([]);
    expect(h.peek()).toBe(40);
  });

  it("orders many random deadlines", () => {
    const h = new DeadlineHeap();
    const values = Array.from({ length: 500 }, (_, i) => (i * 7919) % 1000);
    values.forEach((v, i) => h.push(v, String(i)));
    const popped = h.popDue(Infinity).map((e) => e.atMs);
    expect(popped).toEqual([...values].sort((a, b) => a - b));
  });

  it("compacts away stale entries", () => {
    const h = new DeadlineHeap();
    h.push(10, "a");
    h.push(20, "a");
    h.push(15, "b");
    h.compact((at, k) => (k === "a" ? at === 20 : true));
    expect(h.size).toBe(2);
    expect(h.popDue(100)).toEqual([
      { atMs: 15, key: "b" },
      { atMs: 20, key: "a" },
    ]);
  });
});

describe("ServerTimeBudget", () => {
  it("allows optional work while within 1% of the server's time and pauses it while in debt", () => {
    let t = 0;
    const b = new ServerTimeBudget(0.01, () => t);
    expect(b.allows()).toBe(true);
    b.spend(30); // 30 ms of server time: 20 ms over the 10 ms burst
    expect(b.allows()).toBe(false);
    t += 1000; // +10 ms of allowance: still 10 ms in debt
    expect(b.allows()).toBe(false);
    t += 1001;
    expect(b.allows()).toBe(true);
    expect(b.spentMs).toBe(30);
  });

  it("caps the saved-up allowance at one second's worth", () => {
    let t = 0;
    const b = new ServerTimeBudget(0.01, () => t);
    t += 3_600_000; // an idle hour buys no burst of 36 s
    b.spend(10.5);
    expect(b.allows()).toBe(false);
  });

  it("is unlimited at 0 and still counts what was spent", async () => {
    let t = 0;
    const b = new ServerTimeBudget(0, () => t);
    b.spend(1e9);
    expect(b.allows()).toBe(true);
    await b.measure(async () => {
      t += 7;
    });
    expect(b.spentMs).toBe(1e9 + 7);
  });

  it("charges a failed batch too", async () => {
    let t = 0;
    const b = new ServerTimeBudget(0.01, () => t);
    await expect(
      b.measure(async () => {
        t += 50;
        throw new Error("timeout");
      }),
    ).rejects.toThrow("timeout");
    expect(b.allows()).toBe(false);
  });
});

describe("the server's own account of lockscope's commands", () => {
  const SAMPLE = [
    "# Commandstats",
    "cmdstat_scan:calls=1001,usec=812345,usec_per_call=811.53,rejected_calls=0,failed_calls=0",
    "cmdstat_type:calls=10000,usec=4567,usec_per_call=0.46,rejected_calls=0,failed_calls=0",
    "cmdstat_pttl:calls=10000,usec=5400,usec_per_call=0.54,rejected_calls=0,failed_calls=0",
    "cmdstat_client|tracking:calls=2,usec=9,usec_per_call=4.50,rejected_calls=0,failed_calls=0",
    "cmdstat_broken:calls=x",
    "",
  ].join("\r\n");

  it("parses calls, usec and usec_per_call per command, skipping what does not parse", () => {
    const m = parseCommandStats(SAMPLE);
    expect([...m]).toEqual([
      ["scan", { calls: 1001, usec: 812345, usecPerCall: 811.53 }],
      ["type", { calls: 10000, usec: 4567, usecPerCall: 0.46 }],
      ["pttl", { calls: 10000, usec: 5400, usecPerCall: 0.54 }],
      ["client|tracking", { calls: 2, usec: 9, usecPerCall: 4.5 }],
    ]);
    expect(parseCommandStats("garbage\r\n").size).toBe(0);
  });

  it("estimates a SCAN step and a read of n keys, and nothing before it knows", () => {
    const c = new CommandCosts();
    expect(c.scanMs()).toBeUndefined();
    expect(c.readMs(250)).toBeUndefined();
    c.update(SAMPLE);
    // commandstats plus what it leaves out: request parsing and the reply (1 µs a command, a fifth more for SCAN).
    expect(c.scanMs()).toBeCloseTo((811.53 * 1.2 + 1) / 1000);
    expect(c.readMs(250)).toBeCloseTo((250 * (2 * (0.46 + 0.54) + 4)) / 1000);
    c.update("# Commandstats\r\n"); // an empty answer keeps the last known costs
    expect(c.scanMs()).toBeCloseTo((811.53 * 1.2 + 1) / 1000);
    // New short strings are read without TYPE: a server that has run no TYPE yet is charged PTTL's rate for it.
    const noType = new CommandCosts();
    noType.update(
      "# Commandstats\r\ncmdstat_pttl:calls=10,usec=5,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n",
    );
    expect(noType.readMs(250)).toBeCloseTo((250 * (2 * (0.5 + 0.5) + 4)) / 1000);
  });

  it("charges the smaller of the reply time and the server's account", async () => {
    let t = 0;
    const b = new ServerTimeBudget(0.01, () => t);
    await b.measure(async () => {
      t += 30; // a slow reply on a busy agent host
    }, 0.8);
    expect(b.spentMs).toBeCloseTo(0.8);
    await b.measure(async () => {
      t += 0.5;
    }, 0.8);
    expect(b.spentMs).toBeCloseTo(1.3);
  });
});
