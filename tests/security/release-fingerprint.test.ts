/**
 * Red-team finding 1: force-release compared the owner in its display form (128 characters and "(+N bytes)"), so a
 * second holder whose value shares that prefix and length looked identical, and a release meant for the first
 * deleted the second's lock. The guard is now the exact holding (Lock.ownerFingerprint, SHA-1 of the raw value or
 * holder field), compared by the dashboard, by the agent on a fresh read, and atomically by the release Lua.
 */
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IoredisReleasePort } from "../../agent/sources/redis/redis-client";
import type { LocksResponse } from "../../lib/contract/api";
import type { Lock } from "../../lib/contract/lock";
import type { ReleaseResult } from "../../lib/contract/release";
import type { RedisServer } from "../harness/redis";
import { startRedisStack, stopStack, waitFor, type Dashboard, type Proc } from "../harness/stack";

let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;

beforeAll(async () => {
  ({ redis, dashboard, agent } = await startRedisStack({ dashboardEnv: { RELEASES_PER_MINUTE: "100" } }));
});

afterAll(() => stopStack({ redis, dashboard, agent }));

async function lockAt(resource: string, until: (l: Lock) => boolean = () => true): Promise<Lock> {
  let found: Lock | undefined;
  await waitFor(`${resource} in the dashboard`, async () => {
    found = (await dashboard.get<LocksResponse>("/api/locks?limit=1000")).locks.find((l) => l.resource === resource);
    return found !== undefined && until(found);
  });
  return found!;
}

async function release(id: string, body: Record<string, unknown>) {
  const res = await dashboard.request(
    `/api/locks/${id}/release`,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    "operator",
  );
  return { status: res.status, body: (await res.json()) as ReleaseResult & { error?: string } };
}

/** Two JSON holder values with the same first `shared` characters and the same length, different tails. */
function twoHolders(length: number, shared = 128): [string, string] {
  const head = `{"owner":"worker","host":"${"h".repeat(shared)}`.slice(0, shared);
  const tail = (c: string) => `${c.repeat(length - shared - 2)}"}`;
  return [head + tail("a"), head + tail("b")];
}

describe.each([
  ["read whole by the agent (200 bytes)", 200],
  ["longer than the agent reads (1,000 bytes: hashed by the server)", 1000],
])("force-release guard, value %s", (_label, length) => {
  it("refuses a release meant for the first holder once a second holder with the same display owner has it", async () => {
    const c = redis.client();
    const key = `sec:lock:fp:${length}`;
    const [first, second] = twoHolders(length);
    expect(first.slice(0, 128)).toBe(second.slice(0, 128));
    await c.set(key, first, "PX", 120_000);
    const seen = await lockAt(key, (l) => l.ownerFingerprint !== undefined);
    const sha = (v: string) => `sha1:${createHash("sha1").update(v).digest("hex")}`;
    expect(seen.ownerFingerprint).toBe(sha(first));

    // The attack: the first holder's lock goes and a second holder takes it with a look-alike value.
    await c.del(key);
    await c.set(key, second, "PX", 120_000);
    const now = await lockAt(key, (l) => l.ownerFingerprint === sha(second));
    expect(now.owner).toBe(seen.owner); // the display form cannot tell them apart...
    expect(now.since).not.toBe(seen.since); // ...but the agent reports a new holding

    const asSeen = { expectedOwner: seen.owner, reason: "first holder looked stuck", confirm: key };
    const withFingerprint = await release(now.id, { ...asSeen, expectedFingerprint: seen.ownerFingerprint });
    expect(withFingerprint.status).toBe(409);
    expect(withFingerprint.body.outcome).toBe("refused-owner-changed");
    const withSince = await release(now.id, { ...asSeen, expectedSince: seen.since });
    expect(withSince.status).toBe(409);
    const ownerOnly = await release(now.id, asSeen);
    expect(ownerOnly.status).toBe(400);
    expect(ownerOnly.body.message).toMatch(/expectedFingerprint/);
    expect(await c.get(key)).toBe(second);

    // The holding the operator really sees now can still be released.
    const ok = await release(now.id, { ...asSeen, expectedFingerprint: now.ownerFingerprint });
    expect(ok.body.outcome).toBe("released");
    expect(await c.exists(key)).toBe(0);
  });
});

describe("the release Lua compares the exact value atomically", () => {
  it("deletes only the value whose SHA-1 it was given, and refuses values over the bound", async () => {
    const client = new Redis(redis.url);
    try {
      const port = new IoredisReleasePort(client);
      const key = Buffer.from("sec:fp:lua");
      const [first, second] = twoHolders(300);
      const hex = (v: string) => createHash("sha1").update(v).digest("hex");
      await client.set(key, second);
      expect(await port.compareAndDelete(key, hex(first), 64 * 1024)).toBe(0);
      expect(await client.get(key)).toBe(second);
      await client.set(key, "x".repeat(70_000));
      expect(await port.compareAndDelete(key, hex("x".repeat(70_000)), 64 * 1024)).toBe(-1);
      expect(await client.exists(key)).toBe(1);
      await client.hset("sec:fp:hash", "f", "1");
      expect(await port.compareAndDelete(Buffer.from("sec:fp:hash"), hex("f"), 64 * 1024)).toBe(0);
      await client.set(key, second);
      expect(await port.compareAndDelete(key, hex(second), 64 * 1024)).toBe(1);
      expect(await client.exists(key)).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});

describe("Redisson-style hash locks", () => {
  it("a look-alike holder field (same first 128 characters) is never deleted for the field the operator saw", async () => {
    const c = redis.client();
    const key = "sec:lock:fp:hash";
    const [first, second] = twoHolders(180).map((v) => v.replace(/[^a-z0-9]/g, "x"));
    await c.hset(key, first!, "1");
    await c.pexpire(key, 120_000);
    const seen = await lockAt(key, (l) => l.ownerFingerprint !== undefined);
    await c.del(key);
    await c.hset(key, second!, "1");
    await c.pexpire(key, 120_000);
    const now = await lockAt(key, (l) => l.ownerFingerprint !== seen.ownerFingerprint);
    expect(now.owner).toBe(seen.owner);
    const res = await release(now.id, {
      expectedOwner: seen.owner,
      expectedFingerprint: seen.ownerFingerprint,
      reason: "holder gone",
      confirm: key,
    });
    expect(res.status).toBe(409);
    expect(await c.hexists(key, second!)).toBe(1);
  });
});
