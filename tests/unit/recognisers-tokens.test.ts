import { describe, expect, it } from "vitest";
import type { KeySample } from "../../agent/sources/redis/redis-port";
import { recognise, type Recognition } from "../../agent/sources/redis/recognisers";
import { decodeUuid1Hex } from "../../agent/sources/redis/recognisers/redis-py";
import { B64_24, B64URL_22, HEX32, NOW, str, UUID1_HEX, UUID4 } from "./recognisers-fixtures";

interface Case {
  name: string;
  sample: KeySample;
  want: Partial<Recognition>;
  hazards?: string[];
}

function run(cases: Case[]) {
  for (const c of cases) {
    it(c.name, () => {
      const got = recognise(c.sample, NOW);
      expect(got).toMatchObject(c.want);
      expect((got.hazards ?? []).map((h) => h.code).sort()).toEqual((c.hazards ?? []).sort());
    });
  }
}

describe("single-value string locks", () => {
  run([
    // node-redlock v5: randomBytes(16).toString("hex"), always with PX.
    {
      name: "node-redlock hex token with a TTL",
      sample: str("invoice:42", HEX32, 4_900),
      want: { library: "node-redlock (single node)", rule: "hex32-token-guess", owner: HEX32 },
    },
    {
      name: "hex token without TTL cannot be node-redlock's",
      sample: str("invoice:42", HEX32, -1),
      want: { library: "generic", rule: "hex32-token" },
    },
    {
      name: "upper-case hex is not node-redlock's",
      sample: str("invoice:42", HEX32.toUpperCase(), 5000),
      want: { library: "generic" },
    },
    {
      name: "hex token cut short (31 chars)",
      sample: str("invoice:42", HEX32.slice(1), 5000),
      want: { library: "generic", rule: "generic-string-token" },
    },

    // redis-py: uuid1().hex, no TTL by default.
    {
      name: "redis-py UUIDv1 token decoded",
      sample: str("resource", UUID1_HEX, 9_000),
      want: {
        library: "redis-py",
        rule: "redis-py-uuid1-token",
        owner: UUID1_HEX,
        holder: {
          acquiredAt: "2024-05-01T09:59:58.250Z",
          clockSeq: 0x2a3,
          node: "52:54:00:12:34:56",
          randomNode: false,
        },
      },
    },
    {
      name: "redis-py default: no timeout",
      sample: str("resource", UUID1_HEX, -1),
      want: { library: "redis-py" },
      hazards: ["redis-py-no-timeout"],
    },
    {
      name: "UUIDv1 shape with a time in the far future: random hex, node-redlock guess",
      // version nibble 1 and variant 8 but time_hi 0xfff: year ~5236
      sample: str("resource", "916948a007a11fff82a3525400123456", 5_000),
      want: { library: "node-redlock (single node)" },
    },
    {
      name: "UUIDv1 with the wrong variant nibble",
      sample: str("resource", "916948a007a111ef72a3525400123456", 5_000),
      want: { library: "node-redlock (single node)" },
    },

    // go-redsync: 16 bytes in standard base64.
    {
      name: "go-redsync token",
      sample: str("my-global-mutex", B64_24, 7_500),
      want: { library: "go-redsync", rule: "base64-16-byte-token-guess", owner: B64_24 },
    },
    {
      name: "base64 of 16 bytes but without TTL",
      sample: str("my-global-mutex", B64_24, -1),
      want: { library: "generic" },
    },
    {
      name: "24 chars ending == whose last data char carries more than 2 bits",
      sample: str("m", "q/nAo7fhTSKRxPA7jmpdFx==", 7_500),
      want: { library: "generic" },
    },

    // bsm/redislock: 22 chars base64url + optional metadata.
    {
      name: "bsm/redislock token",
      sample: str("my-key", B64URL_22, 100),
      want: { library: "bsm-redislock", rule: "base64url-16-byte-token-guess", holder: { token: B64URL_22 } },
    },
    {
      name: "bsm/redislock token with metadata",
      sample: str("my-key", `${B64URL_22}{"job":17}`, 100),
      want: {
        library: "bsm-redislock",
        rule: "base64url-16-byte-token-with-metadata-guess",
        holder: { token: B64URL_22, metadata: '{"job":17}' },
      },
    },
    {
      name: "bsm/redislock with 1 MB of metadata: only the preview was read",
      sample: str("my-key", B64URL_22 + "m".repeat(1_048_576), 100),
      want: { library: "bsm-redislock", holder: { token: B64URL_22, metadata: `${"m".repeat(96)}…(+1048480 bytes)` } },
    },
    {
      name: "22 lower-case letters: a word, not a token",
      sample: str("my-key", "abcdefghijklmnopqrstuw", 100),
      want: { library: "generic" },
    },

    // pottery: redlock:<key> + UUIDv4.
    {
      name: "pottery Redlock",
      sample: str("redlock:printer", UUID4, 9_000),
      want: { library: "pottery", rule: "pottery-redlock-key-uuid4", owner: UUID4 },
    },
    {
      name: "redlock: prefix with a hex token is node-redlock's guess",
      sample: str("redlock:printer", HEX32, 9_000),
      want: { library: "node-redlock (single node)" },
    },

    // Spring RedisLockRegistry: <registryKey>:<path> + UUIDv4 with PX.
    {
      name: "Spring registry lock",
      sample: str("orders-registry:order/42", UUID4, 59_000),
      want: {
        library: "spring-integration",
        rule: "uuid4-registry-key-guess",
        holder: { clientId: UUID4, registryKey: "orders-registry", path: "order/42" },
      },
    },
    {
      name: "UUIDv4 without TTL: never Spring's",
      sample: str("orders-registry:order/42", UUID4, -1),
      want: { library: "generic", rule: "uuid4-token" },
    },
    {
      name: "UUIDv4 on a key without a registry prefix",
      sample: str("lock", UUID4, 3_000),
      want: { library: "generic", rule: "uuid4-token" },
    },
    {
      name: "UUIDv1 text (36 chars) is generic",
      sample: str("lock", "ec3a6c29-ec39-11f1-82a3-525400123456", 3_000),
      want: { library: "generic", rule: "uuid-token", holder: { uuidVersion: 1 } },
    },

    // Textbook locks from the seeds.
    {
      name: "SETNX key 1",
      sample: str("lock", "1", -1),
      want: { library: "generic", rule: "integer-token", holder: { value: 1 } },
    },
    {
      name: "SET order_42 <driverId> NX PX 30000",
      sample: str("order_42", "1007", 29_000),
      want: { library: "generic", rule: "integer-token", holder: { value: 1007 } },
    },
    {
      name: "integer with a leading zero is a string",
      sample: str("lock", "007", 1_000),
      want: { rule: "generic-string-token" },
    },
    {
      name: "random token",
      sample: str("lock", "tok-3a1", 1_000),
      want: { library: "generic", rule: "generic-string-token", owner: "tok-3a1" },
    },
  ]);
});

describe("ShedLock", () => {
  run([
    {
      name: "Spring provider value, default env",
      sample: str("job-lock:default:reportJob", "ADDED:2024-05-01T09:59:00.123Z@worker-7", 50_000),
      want: {
        library: "shedlock",
        rule: "shedlock-value",
        owner: "ADDED:2024-05-01T09:59:00.123Z@worker-7",
        holder: { host: "worker-7", acquiredAt: "2024-05-01T09:59:00.123Z", env: "default", lockName: "reportJob" },
      },
    },
    {
      name: "newer value with an instance uuid, Instant.toString with nanoseconds",
      sample: str(
        "job-lock:prod:billing:daily",
        `ADDED:2024-05-01T09:59:00.123456789Z@ip-10-0-0-7.ec2.internal:${UUID4}`,
        50_000,
      ),
      want: {
        holder: {
          host: "ip-10-0-0-7.ec2.internal",
          instanceId: UUID4,
          acquiredAt: "2024-05-01T09:59:00.123Z",
          env: "prod",
          lockName: "billing:daily",
        },
      },
    },
    {
      name: "host lookup failed",
      sample: str("job-lock:default:x", "ADDED:2024-05-01T09:59:00Z@unknown host", 50_000),
      want: { holder: { host: "unknown host", acquiredAt: "2024-05-01T09:59:00.000Z" } },
    },
    {
      name: "custom key prefix without env: value still decides",
      sample: str("shedlock-x", "ADDED:2024-05-01T09:59:00.000Z@h", 1_000),
      want: { library: "shedlock", holder: { host: "h" } },
    },
    {
      name: "RTL override and emoji in the lock name are escaped",
      sample: str("job-lock:default:\u202Ebad\u{1F512}", "ADDED:2024-05-01T09:59:00.000Z@h\u202E", 1_000),
      want: { holder: { lockName: "\\u{202e}bad\u{1F512}", host: "h\\u{202e}" } },
    },
    {
      name: "not an ISO instant",
      sample: str("job-lock:default:x", "ADDED:yesterday@host", 1_000),
      want: { library: "generic" },
    },
    {
      name: "no host separator",
      sample: str("job-lock:default:x", "ADDED:2024-05-01T09:59:00.000Z", 1_000),
      want: { library: "generic" },
    },
  ]);
});

describe("decodeUuid1Hex", () => {
  it("decodes Python's uuid1 fields", () => {
    expect(decodeUuid1Hex(UUID1_HEX)).toEqual({
      unixMs: 1_714_557_598_250,
      clockSeq: 675,
      node: "52:54:00:12:34:56",
      randomNode: false,
    });
  });
  it("flags a random node (multicast bit)", () => {
    expect(decodeUuid1Hex("916948a007a111ef82a3535400123456")?.randomNode).toBe(true);
  });
  for (const bad of ["", "zz", UUID1_HEX.toUpperCase(), `${UUID1_HEX}0`, "916948a007a141ef82a3525400123456"]) {
    it(`rejects ${JSON.stringify(bad)}`, () => expect(decodeUuid1Hex(bad)).toBeNull());
  }
});
