import { describe, expect, it } from "vitest";
import type { KeySample } from "../../agent/sources/redis/redis-port";
import { recognise, type Recognition, type RecognitionHints } from "../../agent/sources/redis/recognisers";
import { NOW, str, UUID4, zset } from "./recognisers-fixtures";

const C1 = "1b4e28ba-2fa1-4d3b-a3f5-ef19a2b5c8e0";
const C2 = "9c1d0e2f-3a4b-4c5d-8e6f-7a8b9c0d77aa";
const C3 = "0a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d";

interface Case {
  name: string;
  sample: KeySample;
  hints?: RecognitionHints;
  want: Partial<Recognition>;
  hazards?: string[];
}

function run(cases: Case[]) {
  for (const c of cases) {
    it(c.name, () => {
      const got = recognise(c.sample, NOW, new Map(), c.hints);
      expect(got).toMatchObject(c.want);
      expect((got.hazards ?? []).map((h) => h.code).sort()).toEqual((c.hazards ?? []).sort());
    });
  }
}

describe("redis-semaphore Mutex", () => {
  run([
    {
      name: "randomUUID identifier",
      sample: str("mutex:orders", UUID4, 9_000),
      want: { library: "redis-semaphore", rule: "redis-semaphore-mutex", owner: UUID4 },
    },
    {
      name: "identifierSuffix",
      sample: str("mutex:orders", `${UUID4}-worker-3`, 9_000),
      want: { rule: "redis-semaphore-mutex-uuid-suffix", holder: { identifierSuffix: "worker-3" } },
    },
    {
      name: "custom identifier",
      sample: str("mutex:orders", "job-17", 9_000),
      want: { rule: "redis-semaphore-mutex-custom-identifier", owner: "job-17" },
    },
    {
      name: "1 MB identifier: prefix only, still by key prefix",
      sample: str("mutex:orders", "x".repeat(1_048_576), 9_000),
      want: { rule: "redis-semaphore-mutex-custom-identifier", owner: `${"x".repeat(128)}…(+1048448 bytes)` },
    },
    {
      name: "bare `mutex:` key is not a mutex of anything",
      sample: str("mutex:", UUID4, 9_000),
      want: { library: "generic" },
    },
  ]);
});

describe("redis-semaphore Semaphore", () => {
  run([
    {
      name: "two live holders: lockTimeout inferred from the key's TTL",
      // last acquire/refresh at NOW-1000 with lockTimeout 10 000 -> PTTL 9 000 now
      sample: zset(
        "semaphore:pool",
        [
          [C1, NOW - 6_000],
          [C2, NOW - 1_000],
        ],
        9_000,
      ),
      want: {
        library: "redis-semaphore",
        rule: "redis-semaphore-semaphore",
        owner: C1,
        holder: {
          permitsHeld: 2,
          clients: 2,
          oldestRefreshAt: "2024-05-01T09:59:54.000Z",
          lockTimeoutMs: 10_000,
          lockTimeoutInferred: true,
        },
        // each permit is a holder with its own lease: lockTimeout after its last acquire/refresh
        holders: [
          { owner: C1, ttlMs: 4_000 },
          { owner: C2, ttlMs: 9_000 },
        ],
      },
    },
    {
      name: "a holder that stopped refreshing",
      sample: zset(
        "semaphore:pool",
        [
          [C1, NOW - 15_000],
          [C2, NOW - 1_000],
        ],
        9_000,
      ),
      want: { holder: { permitsHeld: 2 } },
      hazards: ["semaphore-stale-holders"],
    },
    {
      name: "inference ignores the agent's clock: client clocks 1 h behind, nothing stale",
      sample: zset(
        "semaphore:pool",
        [
          [C1, NOW - 3_600_000 - 6_000],
          [C2, NOW - 3_600_000 - 1_000],
        ],
        9_000,
      ),
      want: { holder: { lockTimeoutInferred: true } },
    },
    {
      name: "MultiSemaphore: one client holding 3 permits",
      sample: zset(
        "semaphore:pool",
        [
          [`${C3}_0`, NOW - 100],
          [`${C3}_1`, NOW - 100],
          [`${C3}_2`, NOW - 100],
        ],
        9_900,
      ),
      want: { holder: { permitsHeld: 3, clients: 1 } },
    },
    {
      name: "only the lowest page read: default lockTimeout assumed",
      sample: zset("semaphore:pool", [[C1, NOW - 11_000]], 9_000, 500),
      want: {
        holder: { permitsHeld: 500, lockTimeoutMs: 10_000, lockTimeoutInferred: false },
        holders: [{ owner: C1, ttlMs: 0 }],
        holdersTotal: 500,
      },
      hazards: ["semaphore-stale-holders"],
    },
    {
      name: "configured limit exceeded",
      sample: zset(
        "semaphore:pool",
        [
          [C1, NOW - 100],
          [C2, NOW - 100],
          [C3, NOW - 100],
        ],
        9_900,
      ),
      hints: { semaphoreLimits: new Map([["semaphore:pool", 2]]) },
      want: { holder: { limit: 2, permitsHeld: 3 } },
      hazards: ["semaphore-over-subscribed"],
    },
    {
      name: "configured limit respected",
      sample: zset("semaphore:pool", [[C1, NOW - 100]], 9_900),
      hints: { semaphoreLimits: new Map([["semaphore:pool", 2]]) },
      want: { holder: { limit: 2 } },
    },
    {
      name: "NaN and infinite scores: flagged, not thrown",
      sample: zset(
        "semaphore:pool",
        [
          [C1, Number.NaN],
          [C2, Number.POSITIVE_INFINITY],
          [C3, -0],
        ],
        9_000,
      ),
      want: { rule: "redis-semaphore-semaphore", holder: { lockTimeoutInferred: false } },
      hazards: ["semaphore-unreadable-scores", "semaphore-stale-holders"],
    },
    {
      name: "empty member page",
      sample: zset("semaphore:pool", [], 9_000, 0),
      want: { rule: "redis-semaphore-semaphore", owner: null },
    },
    {
      name: "`semaphore:` string is not a Semaphore",
      sample: str("semaphore:pool", UUID4, 9_000),
      want: { library: "spring-integration" },
    },
  ]);
});
