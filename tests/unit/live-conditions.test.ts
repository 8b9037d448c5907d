import { describe, expect, it } from "vitest";
import type { Hazard, Lock, SourceStatus } from "../../lib/contract/lock";
import { LiveConditions } from "../../lib/server/alerts/live-conditions";
import { evaluateConditions, type AlertRulesConfig, type Condition } from "../../lib/server/alerts/rules";
import { LiveState } from "../../lib/server/live-state";
import { prng } from "../harness/prng";

const HAZARDS: Hazard[] = [
  { code: "no-ttl", severity: "warning", message: "never expires" },
  { code: "expired-while-held", severity: "critical", message: "took over" },
  { code: "some-info", severity: "info", message: "no rule" },
  { code: "unknown-critical", severity: "critical", message: "its own rule" },
];

const CONFIGS: Array<[string, AlertRulesConfig]> = [
  ["every rule", { maxHoldMs: 20_000, maxWaiters: 2, maxWaitMs: 8_000, disabled: new Set() }],
  [
    "some rules off",
    { maxHoldMs: 20_000, maxWaiters: 0, maxWaitMs: 8_000, disabled: new Set(["held-too-long", "no-ttl"]) },
  ],
  ["time rules off", { maxHoldMs: 0, maxWaiters: 3, maxWaitMs: 0, disabled: new Set() }],
];

function randomLock(rand: () => number, id: number, now: number, agent: string): Lock {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const hazards = HAZARDS.filter(() => rand() < 0.1);
  const since = rand() < 0.02 ? "not a time" : new Date(now - Math.floor(rand() * 40_000)).toISOString();
  return {
    id: `L${id}`,
    backend: pick(["redis", "redlock", "zookeeper"] as const),
    source: pick(["s1", "s2"]),
    resource: `lock:${id}`,
    owner: `owner-${Math.floor(rand() * 5)}`,
    library: "generic",
    rule: "r",
    ttlMs: rand() < 0.1 ? null : 30_000,
    holder: null,
    waiters: Array.from({ length: rand() < 0.8 ? 0 : Math.floor(rand() * 5) }, (_, i) => ({
      owner: `w${i}`,
      ...(rand() < 0.7 ? { since: new Date(now - Math.floor(rand() * 16_000)).toISOString() } : {}),
    })),
    since,
    observedAt: new Date(now).toISOString(),
    kind: "string",
    valuePreview: null,
    hazards,
    agentId: agent,
  };
}

const byKey = (cs: Condition[]) => [...cs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

describe("LiveConditions", () => {
  for (const [name, cfg] of CONFIGS) {
    it(`gives the full pass's conditions on a seeded random workload (${name})`, async () => {
      const rand = prng(name.length * 7919);
      let now = 1_000_000;
      const live = new LiveState(() => now);
      const sources = (agent: string): SourceStatus[] => [
        {
          id: `src-${agent}`,
          kind: "redis",
          up: rand() < 0.8,
          locks: 0,
          agentId: agent,
          ...(rand() < 0.2
            ? { hazards: [{ code: "too-many-locks", severity: "warning" as const, message: "cap" }] }
            : {}),
        },
      ];
      // Two agents report overlapping ids (two agents watching the same server): the first agent's lock wins.
      const snapshot = (agent: string, ids: number[]) =>
        live.applySnapshot({
          agentId: agent,
          agentName: agent,
          version: "t",
          at: new Date(now).toISOString(),
          sources: sources(agent),
          locks: ids.map((i) => randomLock(rand, i, now, agent)),
        });
      snapshot(
        "a",
        Array.from({ length: 3000 }, (_, i) => i),
      );
      snapshot(
        "b",
        Array.from({ length: 300 }, (_, i) => i * 7),
      );
      // Slices of 0 ms: the pass yields every 256 locks, as it does at 100,000 locks.
      const incremental = new LiveConditions(live, cfg, 0);
      let compared = 0;
      let seen = 0;
      for (let step = 0; step < 100; step++) {
        const r = rand();
        const agent = rand() < 0.8 ? "a" : "b";
        if (r < 0.5) {
          const upserts = Array.from({ length: 1 + Math.floor(rand() * 50) }, () =>
            randomLock(rand, Math.floor(rand() * 3500), now, agent),
          );
          const removed = Array.from({ length: Math.floor(rand() * 20) }, () => `L${Math.floor(rand() * 3500)}`);
          live.applyUpdate({
            agentId: agent,
            at: new Date(now).toISOString(),
            sources: sources(agent),
            upserts,
            removed,
            events: [],
          });
        } else if (r < 0.55) {
          snapshot(
            agent,
            Array.from({ length: 2000 }, () => Math.floor(rand() * 3500)),
          );
        } else if (r < 0.6) {
          live.disconnect(agent);
        }
        // Time passes alone too: held-too-long and waited-too-long trip, and their messages move on.
        now += Math.floor(rand() * 4000);
        const pass = incremental.evaluate(now);
        if (rand() < 0.3) {
          // A change while the pass yields lands in the next pass (compared after it).
          await new Promise((resolve) => setImmediate(resolve));
          live.applyUpdate({
            agentId: "a",
            at: new Date(now).toISOString(),
            sources: sources("a"),
            upserts: [randomLock(rand, Math.floor(rand() * 3500), now, "a")],
            removed: [`L${Math.floor(rand() * 3500)}`],
            events: [],
          });
          await pass;
          continue;
        }
        const got = await pass;
        const want = evaluateConditions(live.rawLocks(), live.sources(), now, cfg);
        expect(byKey(got)).toEqual(byKey(want));
        compared++;
        seen += want.length;
      }
      expect(compared).toBeGreaterThan(50);
      // The workload raised a fair number of conditions, time-based ones included (else the test proves little).
      expect(seen).toBeGreaterThan(1000);
    });
  }

  it("re-evaluates only what changed or moves with time", async () => {
    const now = 1_000_000;
    const live = new LiveState(() => now);
    const rand = prng(1);
    const locks = Array.from({ length: 5000 }, (_, i) => ({ ...randomLock(rand, i, now, "a"), waiters: [] }));
    live.applySnapshot({ agentId: "a", agentName: "a", version: "t", at: "", sources: [], locks });
    const cfg: AlertRulesConfig = { maxHoldMs: 35_000, maxWaiters: 2, maxWaitMs: 8_000, disabled: new Set() };
    let read = 0;
    const counted = {
      trackChanges: () => live.trackChanges(),
      heldSince: (ms: number) => live.heldSince(ms),
      sources: () => live.sources(),
      entriesOf: (id: string) => {
        read++;
        return live.entriesOf(id);
      },
    };
    const incremental = new LiveConditions(counted, cfg);
    await incremental.evaluate(now);
    expect(read).toBe(5000);
    read = 0;
    await incremental.evaluate(now + 100);
    // Only the locks over the 35 s hold limit (acquired 0 to 40 s ago) are read again, and those whose since does not
    // parse (filed as acquired at 0: they raise nothing).
    const over = locks.filter((l) => !(now + 100 - Date.parse(l.since) <= 35_000)).length;
    expect(over).toBeGreaterThan(0);
    expect(read).toBe(over);
  });
});
