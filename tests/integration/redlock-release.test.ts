import { randomUUID } from "node:crypto";
import Redlock from "redlock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LockDetailResponse } from "../../lib/contract/api";
import type { Lock } from "../../lib/contract/lock";
import type { AuditEntryView, ReleaseResult } from "../../lib/contract/release";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc } from "../harness/stack";

const prefix = `test-${randomUUID()}`;
const RELEASED = `${prefix}:lock:nightly-report`;
const RACED = `${prefix}:lock:invoice-run`;
const FROZEN = `${prefix}:lock:payout`;
const LEASE_MS = 120_000;

const servers: RedisServer[] = [];
let plain: RedisServer;
let clients: ReturnType<RedisServer["client"]>[] = [];
let redlock: Redlock;
let dashboard: Dashboard;
let agent: Proc;
const tokens = new Map<string, string>();

/** The agent's id for a node: its URL with the database number (agent/config.ts parseRedisTarget). */
const nodeId = (s: RedisServer) => `${s.url}/0`;

beforeAll(async () => {
  // One at a time: each takes a free port from the kernel, and two parallel starts could be handed the same one.
  for (let i = 0; i < 5; i++) servers.push(await startRedis());
  plain = await startRedis();
  clients = servers.map((s) => s.client());
  for (const c of clients) c.on("error", () => undefined); // the frozen node's client complains; expected
  redlock = new Redlock(clients, { retryCount: 0 });
  for (const resource of [RELEASED, RACED, FROZEN]) {
    tokens.set(resource, (await redlock.acquire([resource], LEASE_MS)).value);
  }
  dashboard = await startDashboard();
  // The agent polls once, at start: afterwards only a release changes what it reports. So the race below is
  // decided by the agent's own re-read of the nodes, never by a poll that happened to come first.
  agent = startAgent(dashboard.url, {
    REDIS_URLS: plain.url,
    REDLOCK_NODES: servers.map((s) => s.url).join(","),
    POLL_INTERVAL_MS: "600000",
    COMMAND_TIMEOUT_MS: "1000",
  });
});

afterAll(async () => {
  await agent?.stop();
  await dashboard?.stop();
  dashboard?.cleanup();
  for (const s of servers) s.thaw();
  await Promise.all([...servers, plain].filter(Boolean).map((s) => s.stop()));
});

async function seen(resource: string): Promise<Lock> {
  let found: Lock | undefined;
  await waitFor(
    `${resource} in the dashboard`,
    async () => {
      found = (await dashboard.allLocks()).locks.find((l) => l.resource === resource);
      return found !== undefined;
    },
    { timeoutMs: 30_000 },
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\nagent output:\n${agent.output()}`);
  });
  return found!;
}

async function release(id: string, body: Record<string, unknown>): Promise<{ status: number; result: ReleaseResult }> {
  const res = await dashboard.request(
    `/api/locks/${id}/release`,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    "operator",
  );
  return { status: res.status, result: (await res.json()) as ReleaseResult };
}

const onEveryNode = (key: string) => Promise.all(clients.map((c) => c.get(key)));

describe("force-release of a Redlock lock through the dashboard, on five real redis-servers", () => {
  it("dry run plans one conditional delete per node; the release deletes on all five and reports each", async () => {
    const lock = await seen(RELEASED);
    const token = tokens.get(RELEASED)!;
    expect(lock).toMatchObject({ backend: "redlock", owner: token, quorum: { votes: 5, nodes: 5, state: "held" } });

    const dry = await release(lock.id, { expectedOwner: token, reason: "report job died", dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.result.outcome).toBe("dry-run");
    expect(dry.result.plan).toEqual(
      servers.map((s) => `DEL ${RELEASED} on ${nodeId(s)} only if its value is still ${token}`),
    );
    expect(dry.result.perNode.map((n) => [n.node, n.outcome])).toEqual(servers.map((s) => [nodeId(s), "dry-run"]));
    expect(await onEveryNode(RELEASED)).toEqual(Array(5).fill(token));

    const real = await release(lock.id, {
      expectedOwner: token,
      expectedFingerprint: lock.ownerFingerprint,
      reason: "report job died",
      confirm: RELEASED,
    });
    expect(real.status).toBe(200);
    expect(real.result.outcome).toBe("released");
    expect(real.result.message).toMatch(/^released on 5 of 5 nodes/);
    expect(real.result.perNode).toEqual(servers.map((s) => ({ node: nodeId(s), outcome: "released" })));
    expect(await onEveryNode(RELEASED)).toEqual(Array(5).fill(null));

    // Reported by the agent with the release itself: no poll runs in this test after the first.
    const after = await dashboard.allLocks();
    expect(after.locks.some((l) => l.id === lock.id)).toBe(false);
    const detail = await dashboard.get<LockDetailResponse>(`/api/locks/${lock.id}`);
    expect(detail.events[0]).toMatchObject({
      type: "released",
      detail: { reason: "force-released", by: "test-operator" },
    });
    const audit = (await (await dashboard.request("/api/audit", {}, "operator")).json()) as {
      entries: AuditEntryView[];
    };
    expect(audit.entries[0]).toMatchObject({ lockId: lock.id, outcome: "released", dryRun: false });
    expect(audit.entries[0]!.perNode).toHaveLength(5);
  });

  it("deletes nothing when the token changed on the nodes between the operator's view and the release", async () => {
    const lock = await seen(RACED);
    const seenToken = tokens.get(RACED)!;
    // The holder's lease ran out and another client acquired it on every node; the dashboard still shows the first.
    const next = randomUUID().replace(/-/g, "");
    await Promise.all(clients.map((c) => c.set(RACED, next, "PX", LEASE_MS)));

    const res = await release(lock.id, {
      expectedOwner: seenToken,
      expectedFingerprint: lock.ownerFingerprint,
      reason: "looks stuck",
      confirm: RACED,
    });
    expect(res.status).toBe(409);
    expect(res.result.outcome).toBe("refused-owner-changed");
    expect(res.result.message).toMatch(/nothing deleted/);
    // Per-node lines come from the agent's re-read of every node, not from the dashboard's stale view.
    expect(res.result.perNode.map((n) => [n.node, n.outcome])).toEqual(
      servers.map((s) => [nodeId(s), "refused-owner-changed"]),
    );
    expect(await onEveryNode(RACED)).toEqual(Array(5).fill(next));
    await Promise.all(clients.map((c) => c.del(RACED)));
  });

  // Freezes a node: runs last.
  it("a frozen node does not hold up the release: the others are freed, it is reported, its queued delete is safe", async () => {
    const lock = await seen(FROZEN);
    const token = tokens.get(FROZEN)!;
    const frozen = servers[4]!;
    frozen.freeze();
    let res: { status: number; result: ReleaseResult };
    const started = performance.now();
    try {
      res = await release(lock.id, {
        expectedOwner: token,
        expectedFingerprint: lock.ownerFingerprint,
        reason: "payout worker gone",
        confirm: FROZEN,
      });
    } finally {
      frozen.thaw();
    }
    // Re-read, delete and the look after: one 1 s deadline each at most, whatever the frozen node queues.
    expect(performance.now() - started).toBeLessThan(6_000);
    expect(res.status).toBe(200);
    expect(res.result.outcome).toBe("released");
    expect(res.result.message).toMatch(/^released on 4 of 5 nodes; 1 node did not confirm/);
    expect(res.result.perNode.slice(0, 4).map((n) => n.outcome)).toEqual(Array(4).fill("released"));
    expect(res.result.perNode[4]).toMatchObject({
      node: nodeId(frozen),
      outcome: "error",
      detail: expect.stringMatching(/no answer within 1000 ms; the delete may still run there/),
    });
    const after = await dashboard.allLocks();
    expect(after.locks.some((l) => l.id === lock.id)).toBe(false);
    // Thawed, the node runs the compare-and-delete it had queued: it compares first, so only this token goes.
    await waitFor("the queued delete on the thawed node", async () => (await clients[4]!.exists(FROZEN)) === 0);
    expect(await onEveryNode(FROZEN)).toEqual(Array(5).fill(null));
  });
});
