/**
 * Issue 10, items 5 and 8: `dryRun: "true"` did a real release (bodies were not validated), and release attempts
 * refused for role, CSRF, a bad id or a bad body left no audit row; nor did alert acknowledgements.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AlertsResponse } from "../../lib/contract/alerts";
import type { Lock } from "../../lib/contract/lock";
import type { AuditEntryView, ReleaseResult } from "../../lib/contract/release";
import type { RedisServer } from "../harness/redis";
import { startRedisStack, stopStack, TEST_PASSWORD, waitFor, type Dashboard, type Proc } from "../harness/stack";

let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;

beforeAll(async () => {
  ({ redis, dashboard, agent } = await startRedisStack({ dashboardEnv: { RELEASES_PER_MINUTE: "100" } }));
});

afterAll(() => stopStack({ redis, dashboard, agent }));

type Role = "viewer" | "operator" | "admin" | null;

async function seen(resource: string): Promise<Lock> {
  let found: Lock | undefined;
  await waitFor(`${resource} in the dashboard`, async () => {
    found = (await dashboard.allLocks()).locks.find((l) => l.resource === resource);
    return found !== undefined;
  });
  return found!;
}

function post(path: string, body: string | undefined, role: Role = "operator", headers: Record<string, string> = {}) {
  return dashboard.request(
    path,
    { method: "POST", headers: { "content-type": "application/json", ...headers }, body },
    role,
  );
}

async function audit(): Promise<AuditEntryView[]> {
  const res = await dashboard.request("/api/audit?limit=1000", {}, "admin");
  return ((await res.json()) as { entries: AuditEntryView[] }).entries;
}

/** The audit rows written since `before` (newest first). */
async function newRows(before: AuditEntryView[]): Promise<AuditEntryView[]> {
  const known = new Set(before.map((e) => e.id));
  return (await audit()).filter((e) => !known.has(e.id));
}

async function signInAsOperator(): Promise<{ cookie: string; csrfToken: string }> {
  const res = await post("/api/auth/login", JSON.stringify({ name: "operator1", password: TEST_PASSWORD }), null);
  expect(res.status).toBe(200);
  const { csrfToken } = (await res.json()) as { csrfToken: string };
  return { cookie: res.headers.get("set-cookie")!.split(";")[0]!, csrfToken };
}

describe("release bodies are validated: wrong types change nothing", () => {
  it('dryRun: "true" is a 400 naming dryRun, deletes nothing, and is audited', async () => {
    const key = "sec:lock:dry-run-string";
    await redis.client().set(key, "owner-1", "PX", 120_000);
    const lock = await seen(key);
    const before = await audit();
    const res = await post(
      `/api/locks/${lock.id}/release`,
      JSON.stringify({ expectedOwner: "owner-1", reason: "just looking", dryRun: "true", confirm: key }),
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as ReleaseResult;
    expect(body.outcome).toBe("rejected");
    expect(body.message).toMatch(/^dryRun: /);
    expect(await redis.client().get(key)).toBe("owner-1");
    const rows = await newRows(before);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor: "test-operator", outcome: "rejected", lockId: lock.id, resource: key });
    expect(rows[0]!.message).toMatch(/^dryRun: /);
  });

  it("every wrongly typed or unknown field is a 400 that names it", async () => {
    const key = "sec:lock:types";
    await redis.client().set(key, "owner-2", "PX", 120_000);
    const lock = await seen(key);
    const ok = { expectedOwner: "owner-2", reason: "stuck job", confirm: key };
    const cases: Array<[string, Record<string, unknown>]> = [
      ["reason", { ...ok, reason: 42 }],
      ["expectedOwner", { ...ok, expectedOwner: ["owner-2"] }],
      ["expectedSince", { ...ok, expectedSince: 1_700_000_000_000 }],
      ["expectedFingerprint", { ...ok, expectedFingerprint: "f".repeat(81) }],
      ["confirm", { ...ok, confirm: true }],
      ["purgeWaiter", { ...ok, purgeWaiter: 7 }],
      ["dryrun", { ...ok, dryrun: true }],
    ];
    for (const [field, body] of cases) {
      const res = await post(`/api/locks/${lock.id}/release`, JSON.stringify(body));
      expect(res.status, field).toBe(400);
      expect(((await res.json()) as ReleaseResult).message.startsWith(`${field}: `), field).toBe(true);
    }
    expect(await redis.client().get(key)).toBe("owner-2");
  });
});

describe("sign-in bodies are validated", () => {
  it("a password of the wrong type is a 400 naming it, not a sign-in attempt", async () => {
    const res = await post("/api/auth/login", JSON.stringify({ name: "operator1", password: 12345 }), null);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain("password: must be a string");
    expect(res.headers.get("set-cookie")).toBeNull();
  });
});

describe("every release attempt by a known actor is audited", () => {
  it("refused for role, CSRF, a bad id and a bad body: one row each, naming the actor; none without credentials", async () => {
    const key = "sec:lock:audit-gaps";
    await redis.client().set(key, "owner-3", "PX", 120_000);
    const lock = await seen(key);
    const body = JSON.stringify({ expectedOwner: "owner-3", reason: "cleanup", confirm: key });
    const path = `/api/locks/${lock.id}/release`;
    const { cookie } = await signInAsOperator();
    const before = await audit();

    expect((await post(path, body, null)).status).toBe(401);
    expect(await newRows(before)).toHaveLength(0);

    expect((await post(path, body, "viewer")).status).toBe(403);
    expect((await post(path, body, null, { cookie })).status).toBe(403); // no X-CSRF-Token
    expect((await post("/api/locks/bad$id/release", body)).status).toBe(400);
    expect((await post(path, "{not json")).status).toBe(400);
    expect((await post(path, JSON.stringify({ ...JSON.parse(body), dryRun: "false" }))).status).toBe(400);
    expect(await redis.client().get(key)).toBe("owner-3");

    const rows = (await newRows(before)).reverse();
    expect(rows.map((r) => [r.actor, r.via, r.outcome, r.lockId])).toEqual([
      ["test-viewer", "token", "rejected", lock.id],
      ["operator1", "session", "rejected", lock.id],
      ["test-operator", "token", "rejected", "bad$id"],
      ["test-operator", "token", "rejected", lock.id],
      ["test-operator", "token", "rejected", lock.id],
    ]);
    expect(rows[0]!.message).toContain("needs operator");
    expect(rows[1]!.message).toContain("CSRF");
    expect(rows[2]!.message).toContain("URL-safe");
    expect(rows[3]!.message).toContain("not valid JSON");
    expect(rows[4]!.message).toMatch(/^dryRun: /);
    expect(rows.every((r) => r.clientAddress === "127.0.0.1" && r.action === "force-release")).toBe(true);
    expect(rows[0]).toMatchObject({ observedOwner: "owner-3", reason: "cleanup", resource: key });
  });
});

describe("alert acknowledgements are audited", () => {
  it("records the acknowledgement, the refused attempts and a second acknowledgement", async () => {
    const key = "sec:lock:never-expires";
    await redis.client().set(key, "owner-4"); // no TTL: raises a no-ttl alert
    let alertId = "";
    await waitFor(
      "no-ttl alert raised",
      async () => {
        const { alerts } = await dashboard.get<AlertsResponse>("/api/alerts?state=open");
        alertId = alerts.find((a) => a.resource === key && a.rule === "no-ttl")?.id ?? "";
        return alertId !== "";
      },
      { timeoutMs: 20_000 },
    );
    const path = `/api/alerts/${alertId}/ack`;
    const before = await audit();

    expect((await post(path, "{}", null)).status).toBe(401);
    expect((await post(path, "{}", "viewer")).status).toBe(403);
    const wrongType = await post(path, JSON.stringify({ note: 5 }));
    expect(wrongType.status).toBe(400);
    expect(((await wrongType.json()) as { error: string }).error).toMatch(/^note: /);
    const ack = await post(path, JSON.stringify({ note: "looking into the job that forgot its TTL" }));
    expect(ack.status).toBe(200);
    expect((await post(path, undefined)).status).toBe(409);

    const rows = (await newRows(before)).reverse();
    expect(rows.map((r) => [r.action, r.actor, r.outcome])).toEqual([
      ["acknowledge-alert", "test-viewer", "rejected"],
      ["acknowledge-alert", "test-operator", "rejected"],
      ["acknowledge-alert", "test-operator", "acknowledged"],
      ["acknowledge-alert", "test-operator", "nothing-to-do"],
    ]);
    expect(rows[2]).toMatchObject({
      resource: key,
      reason: "looking into the job that forgot its TTL",
      message: expect.stringContaining(alertId),
    });
    // The audit filter finds acknowledgements by their outcome.
    const filtered = await dashboard.request("/api/audit?outcome=acknowledged", {}, "operator");
    const entries = ((await filtered.json()) as { entries: AuditEntryView[] }).entries;
    expect(entries.some((e) => e.id === rows[2]!.id)).toBe(true);
  });
});
