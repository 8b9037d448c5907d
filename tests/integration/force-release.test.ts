import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocksResponse } from "../../lib/contract/api";
import type { AuditEntryView, ReleaseResult } from "../../lib/contract/release";
import type { RedisServer } from "../harness/redis";
import { startRedisStack, stopStack, TEST_PASSWORD, waitFor, type Dashboard, type Proc } from "../harness/stack";

let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;

beforeAll(async () => {
  // More release attempts than the default limit of 10 a minute happen in this file.
  ({ redis, dashboard, agent } = await startRedisStack({ dashboardEnv: { RELEASES_PER_MINUTE: "100" } }));
});

afterAll(() => stopStack({ redis, dashboard, agent }));

async function seen(resource: string) {
  let found: LocksResponse["locks"][number] | undefined;
  await waitFor(`${resource} in the dashboard`, async () => {
    found = (await dashboard.allLocks()).locks.find((l) => l.resource === resource);
    return found !== undefined;
  });
  return found!;
}

function release(id: string, body: unknown, role: "viewer" | "operator" | "admin" | null = "operator") {
  return dashboard.request(
    `/api/locks/${id}/release`,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    role,
  );
}

/** The release an operator sends for a lock as the dashboard showed it: its owner and fingerprint, its name typed. */
function releaseAsSeen(lock: LocksResponse["locks"][number], reason: string) {
  return release(lock.id, {
    expectedOwner: lock.owner,
    expectedFingerprint: lock.ownerFingerprint,
    reason,
    confirm: lock.resource,
  });
}

async function audit(): Promise<AuditEntryView[]> {
  const res = await dashboard.request("/api/audit", {}, "operator");
  return ((await res.json()) as { entries: AuditEntryView[] }).entries;
}

describe("force-release of Redis locks", () => {
  it("releases a string lock that still has the observed owner, and the view updates at once", async () => {
    const c = redis.client();
    const key = "fr:lock:string";
    await c.set(key, "dead-worker-token");
    const lock = await seen(key);
    const dry = await release(lock.id, { expectedOwner: "dead-worker-token", reason: "worker died", dryRun: true });
    expect(dry.status).toBe(200);
    const plan = (await dry.json()) as ReleaseResult;
    expect(plan.outcome).toBe("dry-run");
    expect(plan.plan.join(" ")).toContain(`DEL ${key}`);
    expect(await c.exists(key)).toBe(1);

    const res = await releaseAsSeen(lock, "worker died");
    expect(res.status).toBe(200);
    expect(((await res.json()) as ReleaseResult).outcome).toBe("released");
    expect(await c.exists(key)).toBe(0);
    // Reported by the agent as part of the release, not at its next poll.
    const after = await dashboard.allLocks();
    expect(after.locks.some((l) => l.resource === key)).toBe(false);
    const entries = await audit();
    expect(entries.slice(0, 2).map((e) => [e.outcome, e.dryRun, e.actor])).toEqual([
      ["released", false, "test-operator"],
      ["dry-run", true, "test-operator"],
    ]);
  });

  it("follows and releases a lock whose key name is not UTF-8, and never the key its text names in UTF-8", async () => {
    const c = redis.client();
    // The agent keeps a key's bytes as a latin1 string: taken back as UTF-8 they would be the twin's bytes.
    const key = Buffer.concat([Buffer.from("fr:lock:bin:"), Buffer.from([0xff, 0xfe, 0xe9])]);
    const twin = Buffer.from("fr:lock:bin:\u00ff\u00fe\u00e9", "utf8");
    await c.set(key, "bin-token");
    await c.set(twin, "twin-token");
    const resource = "fr:lock:bin:\\xff\\xfe\\xe9";
    expect((await seen(resource)).ttlMs).toBeNull();
    await seen("fr:lock:bin:\u00ff\u00fe\u00e9");
    // A change to the key reaches the dashboard: the key was read again by the name the agent kept.
    await c.pexpire(key, 120_000);
    await waitFor("the binary-named lock's new TTL", async () => {
      const l = (await dashboard.allLocks()).locks.find((x) => x.resource === resource);
      return l !== undefined && l.ttlMs !== null;
    });
    const lock = await seen(resource);
    const res = await releaseAsSeen(lock, "worker died");
    expect(((await res.json()) as ReleaseResult).outcome).toBe("released");
    expect(await c.exists(key)).toBe(0);
    expect(await c.get(twin)).toBe("twin-token");
    const after = (await dashboard.allLocks()).locks.map((l) => l.resource);
    expect(after).not.toContain(resource);
    expect(after).toContain("fr:lock:bin:\u00ff\u00fe\u00e9");
  });

  it("deletes nothing when the lock changed owner between view and release (the race)", async () => {
    const c = redis.client();
    const key = "fr:lock:race";
    await c.set(key, "owner-A", "PX", 60_000);
    const lock = await seen(key);
    // Between the operator's look and the click, A's lease ends and B takes the lock.
    await c.set(key, "owner-B", "PX", 60_000);
    const res = await releaseAsSeen(lock, "A looks stuck");
    expect(res.status).toBe(409);
    expect(((await res.json()) as ReleaseResult).outcome).toBe("refused-owner-changed");
    expect(await c.get(key)).toBe("owner-B");
    expect((await audit())[0]).toMatchObject({ outcome: "refused-owner-changed", observedOwner: "owner-A" });
  });

  it("releases a Redisson-style hash only while it still holds the observed holder field, and wakes waiters", async () => {
    const c = redis.client();
    const key = "fr:lock:redisson";
    const field = "8743c9c0-0795-4907-87fd-6c719a6b4586:1";
    await c.hset(key, field, "1");
    await c.pexpire(key, 60_000);
    const lock = await seen(key);
    expect(lock.library).toBe("redisson");
    const sub = redis.client();
    const messages: string[] = [];
    await sub.subscribe(`redisson_lock__channel:{${key}}`);
    sub.on("message", (_ch, m: string) => messages.push(m));
    const res = await releaseAsSeen(lock, "holder JVM gone");
    const body = (await res.json()) as ReleaseResult;
    expect(body.outcome).toBe("released");
    expect(await c.exists(key)).toBe(0);
    await waitFor("Redisson unlock message published to waiters", () => messages.includes("0"));
  });

  it("purges a dead waiter from a Redisson fair lock's queue, never a live one, and never the lock", async () => {
    const c = redis.client();
    const key = "fr:lock:fair";
    const dead = "1f7c1d7e-0000-4000-8000-000000000002:31";
    const alive = "1f7c1d7e-0000-4000-8000-000000000001:12";
    await c.hset(key, "8743c9c0-0795-4907-87fd-6c719a6b4586:57", "1");
    await c.pexpire(key, 60_000);
    await c.rpush(`redisson_lock_queue:{${key}}`, dead, alive);
    const now = Date.now();
    await c.zadd(`redisson_lock_timeout:{${key}}`, now - 60_000, dead, now + 300_000, alive);
    let lock = await seen(key);
    await waitFor("both waiters shown", async () => {
      lock = (await dashboard.allLocks()).locks.find((l) => l.resource === key)!;
      return lock.waiters.length === 2;
    });
    const purge = (waiter: string) =>
      release(lock.id, { expectedOwner: lock.owner, reason: "thread died", confirm: key, purgeWaiter: waiter });

    const live = await purge(alive);
    expect(((await live.json()) as ReleaseResult).outcome).toBe("refused");
    const ok = await purge(dead);
    expect(((await ok.json()) as ReleaseResult).outcome).toBe("released");
    expect(await c.lrange(`redisson_lock_queue:{${key}}`, 0, -1)).toEqual([alive]);
    expect(await c.zrange(`redisson_lock_timeout:{${key}}`, 0, -1)).toEqual([alive]);
    expect(await c.exists(key)).toBe(1); // the lock itself is untouched
    expect((await purge("not-a-waiter")).status).toBe(400);
    expect((await audit())[0]).toMatchObject({ action: "purge-waiter", outcome: "rejected" });
  });

  it("refuses when the lock was released and taken again under the same owner name since the operator looked", async () => {
    const c = redis.client();
    const key = "fr:lock:same-name";
    await c.set(key, "1");
    const first = await seen(key);
    await c.del(key);
    await waitFor("released", async () => !(await dashboard.allLocks()).locks.some((l) => l.resource === key));
    await c.set(key, "1");
    const again = await seen(key);
    expect(again.since).not.toBe(first.since);
    const res = await release(again.id, {
      expectedOwner: "1",
      expectedSince: first.since,
      reason: "stale",
      confirm: key,
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as ReleaseResult).message).toContain("taken again");
    expect(await c.get(key)).toBe("1");
  });

  it("answers nothing-to-do for a lock already gone", async () => {
    const c = redis.client();
    const key = "fr:lock:gone";
    await c.set(key, "t", "PX", 60_000);
    const lock = await seen(key);
    await c.del(key);
    const res = await releaseAsSeen(lock, "cleanup");
    expect(((await res.json()) as ReleaseResult).outcome).toBe("nothing-to-do");
  });
});

describe("who may release", () => {
  it("401 without credentials, 403 for a viewer, and both audited or refused clearly", async () => {
    const c = redis.client();
    const key = "fr:lock:auth";
    await c.set(key, "t", "PX", 60_000);
    const lock = await seen(key);
    const body = { expectedOwner: "t", reason: "test", confirm: key };
    const anon = await release(lock.id, body, null);
    expect(anon.status).toBe(401);
    expect(await anon.json()).toMatchObject({ error: expect.stringContaining("sign in") });
    const viewer = await release(lock.id, body, "viewer");
    expect(viewer.status).toBe(403);
    expect(await c.get(key)).toBe("t");
    expect((await dashboard.request("/api/locks", {}, null)).status).toBe(401);
    expect((await dashboard.request("/api/audit", {}, "viewer")).status).toBe(403);
  });

  it("requires a reason and the typed confirmation", async () => {
    const c = redis.client();
    const key = "fr:lock:confirm";
    await c.set(key, "t", "PX", 60_000);
    const lock = await seen(key);
    const noReason = await release(lock.id, { expectedOwner: "t", reason: "", confirm: key });
    expect(noReason.status).toBe(400);
    const wrongConfirm = await release(lock.id, { expectedOwner: "t", reason: "because", confirm: "fr:lock:other" });
    expect(wrongConfirm.status).toBe(400);
    expect(await c.get(key)).toBe("t");
    const outcomes = (await audit()).slice(0, 2).map((e) => e.outcome);
    expect(outcomes).toEqual(["rejected", "rejected"]);
  });

  it("a browser session needs the CSRF token and the same origin", async () => {
    const c = redis.client();
    const key = "fr:lock:csrf";
    await c.set(key, "t", "PX", 60_000);
    const lock = await seen(key);
    const login = await dashboard.request(
      "/api/auth/login",
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "operator1", password: TEST_PASSWORD }),
      },
      null,
    );
    expect(login.status).toBe(200);
    const cookieHeader = login.headers.get("set-cookie")!;
    expect(cookieHeader).toMatch(/HttpOnly/);
    expect(cookieHeader).toMatch(/SameSite=Strict/);
    const cookie = cookieHeader.split(";")[0]!;
    const { csrfToken } = (await login.json()) as { csrfToken: string };
    const body = JSON.stringify({
      expectedOwner: "t",
      expectedFingerprint: lock.ownerFingerprint,
      reason: "csrf test",
      confirm: key,
    });
    const post = (headers: Record<string, string>) =>
      dashboard.request(
        `/api/locks/${lock.id}/release`,
        { method: "POST", headers: { "content-type": "application/json", cookie, ...headers }, body },
        null,
      );
    expect((await post({})).status).toBe(403);
    expect((await post({ "x-csrf-token": "forged" })).status).toBe(403);
    expect((await post({ "x-csrf-token": csrfToken, origin: "http://evil.example" })).status).toBe(403);
    expect(await c.get(key)).toBe("t");
    const ok = await post({ "x-csrf-token": csrfToken });
    expect(ok.status).toBe(200);
    expect(await c.exists(key)).toBe(0);
  });

  it("a wrong password gets one clear answer", async () => {
    const res = await dashboard.request(
      "/api/auth/login",
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "operator1", password: "nope" }),
      },
      null,
    );
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: "wrong name or password" });
  });
});
