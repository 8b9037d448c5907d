/**
 * Force-release of ZooKeeper locks end to end: a real ZooKeeper 3.8, the dashboard and an agent as separate
 * processes, contenders as real sessions, and the release asked for through POST /api/locks/:id/release.
 */
import { randomUUID } from "node:crypto";
import type zookeeper from "node-zookeeper-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventsResponse } from "../../lib/contract/api";
import type { Lock } from "../../lib/contract/lock";
import type { AuditEntryView, ReleaseResult } from "../../lib/contract/release";
import { longToHex } from "../../agent/sources/zookeeper/zk-client";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc } from "../harness/stack";
import {
  CreateMode,
  startZookeeper,
  zkCreate,
  zkMkdirp,
  zkRemove,
  zkWatchExists,
  type ZookeeperServer,
} from "../harness/zookeeper";

const root = `/it-release-${randomUUID()}`;
const PARENTS = {
  release: `${root}/release/ParentLock`,
  race: `${root}/race/ParentLock`,
  last: `${root}/last/ParentLock`,
  persistent: `${root}/persistent/ParentLock`,
  jobs: `${root}/jobs`,
};

let zk: ZookeeperServer;
let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;

beforeAll(async () => {
  zk = await startZookeeper({ fourLetterWords: "all" });
  redis = await startRedis();
  dashboard = await startDashboard();
  // Explicit lock parents are watched even before they exist: no wait for a rediscovery.
  agent = startAgent(dashboard.url, {
    REDIS_URLS: redis.url,
    ZK_CONNECT: zk.connect,
    ZK_LOCK_PATHS: Object.values(PARENTS).join(","),
  });
});

afterAll(async () => {
  await agent?.stop();
  await dashboard?.stop();
  dashboard?.cleanup();
  await redis?.stop();
  await zk?.stop();
});

const base = (p: string) => p.slice(p.lastIndexOf("/") + 1);
const sessionOf = (c: zookeeper.Client) => longToHex(c.getSessionId());

function exists(c: zookeeper.Client, path: string): Promise<boolean> {
  return new Promise((resolve, reject) => c.exists(path, (err, stat) => (err ? reject(err) : resolve(stat !== null))));
}

/** The seeds recipe: each session creates `Lock` EPHEMERAL_SEQUENTIAL and watches the node just before its own. */
async function queue(parent: string, n: number) {
  const clients = await Promise.all(Array.from({ length: n }, () => zk.client()));
  await zkMkdirp(clients[0]!, parent);
  const nodes: string[] = [];
  for (const c of clients) nodes.push(await zkCreate(c, `${parent}/Lock`, null, CreateMode.EPHEMERAL_SEQUENTIAL));
  for (let i = 1; i < n; i++) await zkWatchExists(clients[i]!, nodes[i - 1]!);
  return { clients, nodes };
}

async function lockAt(parent: string): Promise<Lock | undefined> {
  return (await dashboard.allLocks()).locks.find((l) => l.resource === parent);
}

/** The lock as the dashboard shows it, once `ready` holds for it. */
async function seen(parent: string, ready: (l: Lock) => boolean = () => true): Promise<Lock> {
  let found: Lock | undefined;
  await waitFor(`${parent} in the dashboard`, async () => {
    found = await lockAt(parent);
    return found !== undefined && ready(found);
  });
  return found!;
}

function release(id: string, body: unknown) {
  return dashboard.request(
    `/api/locks/${id}/release`,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    "operator",
  );
}

describe("force-release of ZooKeeper locks through the dashboard", () => {
  it("dry run shows the plan; the release deletes the holder node only, and the next waiter holds at once", async () => {
    const parent = PARENTS.release;
    const { clients, nodes } = await queue(parent, 3);
    const [a] = clients as [zookeeper.Client];
    // Observed watches mean the agent has read cons too: the plan can say the holder's session is alive.
    const lock = await seen(parent, (l) => l.waiters.length === 2 && l.zookeeper?.watchesObserved === true);
    expect(lock.owner).toBe(base(nodes[0]!));

    const dry = await release(lock.id, { expectedOwner: lock.owner, reason: "holder hung in GC", dryRun: true });
    expect(dry.status).toBe(200);
    const plan = (await dry.json()) as ReleaseResult;
    expect(plan.outcome).toBe("dry-run");
    expect(plan.plan[0]).toBe(
      `delete ${nodes[0]} (version 0, session ${sessionOf(a)}) on zookeeper://${zk.connect}; the next waiter ${base(nodes[1]!)} becomes holder`,
    );
    expect(plan.plan.join("\n")).toMatch(/still connected .*exactly what you ask for here/);
    expect(plan.perNode).toEqual([{ node: nodes[0], outcome: "dry-run" }]);
    expect(await exists(a, nodes[0]!)).toBe(true);

    const res = await release(lock.id, {
      expectedOwner: lock.owner,
      expectedFingerprint: lock.ownerFingerprint,
      reason: "holder hung in GC",
      confirm: parent,
    });
    const body = (await res.json()) as ReleaseResult;
    expect([res.status, body.outcome]).toEqual([200, "released"]);
    expect(body.perNode).toEqual([{ node: nodes[0], outcome: "released", detail: "version 0" }]);
    expect(await exists(a, nodes[0]!)).toBe(false);
    expect(await exists(a, nodes[1]!)).toBe(true);
    expect(await exists(a, nodes[2]!)).toBe(true);
    expect(await exists(a, parent)).toBe(true);
    // Reported by the agent with the release itself, not at a later poll.
    const after = await lockAt(parent);
    expect(after?.owner).toBe(base(nodes[1]!));
    expect(after?.waiters.map((w) => w.owner)).toEqual([base(nodes[2]!)]);

    const { events } = await dashboard.get<EventsResponse>(`/api/events?resource=${encodeURIComponent(parent)}`);
    expect(events[0]).toMatchObject({
      type: "owner-changed",
      owner: base(nodes[1]!),
      previousOwner: base(nodes[0]!),
      detail: expect.objectContaining({ reason: "force-released", by: "test-operator" }),
    });
    const audit = (await (await dashboard.request("/api/audit", {}, "operator")).json()) as {
      entries: AuditEntryView[];
    };
    expect(audit.entries.slice(0, 2).map((e) => [e.outcome, e.dryRun, e.resource])).toEqual([
      ["released", false, parent],
      ["dry-run", true, parent],
    ]);
  });

  it("the holder changed between the view and the release: nothing is deleted", async () => {
    const parent = PARENTS.race;
    const { clients, nodes } = await queue(parent, 3);
    const [a, b] = clients as [zookeeper.Client, zookeeper.Client];
    const lock = await seen(parent, (l) => l.waiters.length === 2);
    expect(lock.owner).toBe(base(nodes[0]!));
    // A lets go just as the operator clicks: B holds, and the release that names A must not touch B.
    await zkRemove(a, nodes[0]!);
    const res = await release(lock.id, {
      expectedOwner: base(nodes[0]!),
      expectedFingerprint: lock.ownerFingerprint,
      reason: "A looked stuck",
      confirm: parent,
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as ReleaseResult).outcome).toBe("refused-owner-changed");
    expect(await exists(b, nodes[1]!)).toBe(true);
    expect(await exists(b, nodes[2]!)).toBe(true);
    expect(await exists(b, parent)).toBe(true);
    await seen(parent, (l) => l.owner === base(nodes[1]!));
  });

  it("releasing the last contender frees the lock and keeps its parent", async () => {
    const parent = PARENTS.last;
    const { clients, nodes } = await queue(parent, 1);
    const lock = await seen(parent);
    const res = await release(lock.id, {
      expectedOwner: lock.owner,
      expectedFingerprint: lock.ownerFingerprint,
      reason: "orphaned",
      confirm: parent,
    });
    expect(((await res.json()) as ReleaseResult).outcome).toBe("released");
    expect(await exists(clients[0]!, nodes[0]!)).toBe(false);
    expect(await exists(clients[0]!, parent)).toBe(true);
    expect(await lockAt(parent)).toBeUndefined();
  });

  it("a PERSISTENT contender of a recognised recipe is released; a persistent node of unknown naming is refused", async () => {
    const c = await zk.client();
    const waiter = await zk.client();
    await zkMkdirp(c, PARENTS.persistent);
    // A client that created its lock node PERSISTENT by mistake: the lock outlives it until someone deletes it.
    const stale = await zkCreate(c, `${PARENTS.persistent}/Lock`, null, CreateMode.PERSISTENT_SEQUENTIAL);
    const next = await zkCreate(waiter, `${PARENTS.persistent}/Lock`, null, CreateMode.EPHEMERAL_SEQUENTIAL);
    const lock = await seen(PARENTS.persistent, (l) => l.waiters.length === 1);
    expect(lock.hazards.map((h) => h.code)).toContain("persistent-contender");
    const dry = (await (
      await release(lock.id, { expectedOwner: lock.owner, reason: "leaked node", dryRun: true })
    ).json()) as ReleaseResult;
    expect(dry.plan[0]).toContain(`(version 0, session 0x0)`);
    const res = await release(lock.id, {
      expectedOwner: lock.owner,
      expectedFingerprint: lock.ownerFingerprint,
      reason: "leaked persistent node",
      confirm: PARENTS.persistent,
    });
    expect(((await res.json()) as ReleaseResult).outcome).toBe("released");
    expect(await exists(c, stale)).toBe(false);
    expect((await lockAt(PARENTS.persistent))?.owner).toBe(base(next));

    // Persistent sequential nodes of no lock recipe are queue items or change logs: never force-deleted.
    await zkMkdirp(c, PARENTS.jobs);
    const job = await zkCreate(c, `${PARENTS.jobs}/job-`, null, CreateMode.PERSISTENT_SEQUENTIAL);
    const jobs = await seen(PARENTS.jobs);
    const refused = await release(jobs.id, {
      expectedOwner: jobs.owner,
      expectedFingerprint: jobs.ownerFingerprint,
      reason: "try it",
      confirm: PARENTS.jobs,
    });
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as ReleaseResult).message).toMatch(/PERSISTENT and not named by a recognised/);
    expect(await exists(c, job)).toBe(true);
  });
});
