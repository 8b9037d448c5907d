import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HealthResponse } from "../../lib/contract/api";
import type { Lock, LockEvent } from "../../lib/contract/lock";
import type { RedisSources } from "../../agent/sources/redis/redis-sources";
import { inProcessRedisSources } from "../harness/in-process-sources";
import type { RedisServer } from "../harness/redis";
import { startRedisCluster, type RedisClusterServers } from "../harness/redis-cluster";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc, stopStack } from "../harness/stack";

/** Three masters; one replica, of the first master (the one the failover test promotes). */
let cluster: RedisClusterServers;
const prefix = `cl-${Date.now()}`;
const sourceOf = (s: RedisServer) => `redis://127.0.0.1:${s.port}/0`;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicaOf: [0] });
});

afterAll(async () => {
  await cluster?.stop();
});

/** Lock keys (in different slots) until every master serves at least one, with the master that serves each. */
async function keysOnEveryMaster(tag: string): Promise<Map<string, RedisServer>> {
  const c = cluster.client();
  const out = new Map<string, RedisServer>();
  const covered = new Set<number>();
  for (let i = 0; covered.size < cluster.masters.length && i < 200; i++) {
    const key = `${prefix}:${tag}:lock:${i}`;
    await c.set(key, `tok-${tag}-${i}`, "PX", 120_000);
    const m = await cluster.masterOf(key);
    if (covered.has(m.port)) {
      await c.del(key);
      continue;
    }
    covered.add(m.port);
    out.set(key, m);
  }
  expect(covered.size).toBe(cluster.masters.length);
  return out;
}

describe("a Redis Cluster through the agent process and the dashboard", () => {
  let dashboard: Dashboard;
  let agent: Proc;

  afterAll(() => stopStack({ dashboard, agent }));

  it("watches every master from one seed and shows each lock with the master that serves its slot", async () => {
    dashboard = await startDashboard();
    agent = startAgent(dashboard.url, { REDIS_URLS: cluster.seedUrl, COMMAND_TIMEOUT_MS: "1000" });
    const keys = await keysOnEveryMaster("agent");
    await waitFor("every lock in /api/locks", async () => {
      const { locks } = await dashboard.allLocks();
      return [...keys.keys()].every((k) => locks.some((l) => l.resource === k));
    });
    const { locks } = await dashboard.allLocks();
    for (const [key, master] of keys) {
      const lock = locks.find((l) => l.resource === key)!;
      expect(lock).toMatchObject({ backend: "redis", source: sourceOf(master), owner: expect.stringMatching(/^tok-/) });
    }
    await waitFor("one source per master, all up", async () => {
      const { sources } = await dashboard.get<HealthResponse>("/api/health");
      const ids = sources.filter((s) => s.kind === "redis").map((s) => s.id);
      return (
        cluster.masters.every((m) => ids.includes(sourceOf(m))) &&
        sources.every((s) => s.up) &&
        !ids.includes(sourceOf(cluster.replicas[0]!))
      );
    });
    expect(agent.output()).toMatch(/Redis Cluster; watching every master/);
  });
});

describe("a Redis Cluster watched in process (statuses, nodes and a failover)", () => {
  let redis: RedisSources;
  const events: LockEvent[] = [];
  const poll = async () => {
    events.push(...(await redis.sources[0]!.poll()).events);
  };
  const locks = (): Lock[] => redis.sources[0]!.locks();
  const statuses = () => redis.sources[0]!.statuses!();

  beforeAll(async () => {
    redis = inProcessRedisSources(cluster.seedUrl, "it-cluster");
    await redis.ready;
  });

  afterAll(() => redis?.close());

  it("reports one status per master, each with its node and replicas (role, offset, lag)", async () => {
    await waitFor("every master watched and up", async () => {
      await poll();
      const s = statuses();
      return s.length === 3 && s.every((x) => x.up);
    });
    const [m0] = cluster.masters;
    const r0 = cluster.replicas[0]!;
    await waitFor("the first master's replica shown with its acknowledged offset", async () => {
      await poll();
      const nodes = statuses().find((s) => s.id === sourceOf(m0!))?.nodes ?? [];
      return nodes.some((n) => n.role === "replica" && n.up && (n.offset ?? 0) > 0);
    });
    const nodes = statuses().find((s) => s.id === sourceOf(m0!))!.nodes!;
    expect(nodes[0]).toMatchObject({ id: `redis://127.0.0.1:${m0!.port}`, role: "master", up: true });
    expect(nodes[1]).toMatchObject({ id: `redis://127.0.0.1:${r0.port}`, role: "replica", up: true });
    expect(nodes[1]!.lagBytes).toBeGreaterThanOrEqual(0);
    const others = statuses().filter((s) => s.id !== sourceOf(m0!));
    for (const s of others) expect(s.nodes).toEqual([expect.objectContaining({ role: "master", up: true })]);
  });

  it("follows a crash failover: same lock ids on the promoted replica, nothing released, the unreplicated lock lost", async () => {
    const [m0] = cluster.masters;
    const r0 = cluster.replicas[0]!;
    const c = cluster.client();
    // A key the first master serves, and one each on the others (they must come through untouched).
    const all = await keysOnEveryMaster("failover");
    const kept = [...all].find(([, m]) => m.port === m0!.port)![0];
    const onReplica = r0.client();
    await onReplica.call("READONLY"); // a cluster replica answers key reads only after READONLY
    await waitFor("all locks seen, the first one on its replica", async () => {
      await poll();
      return (
        [...all.keys()].every((k) => locks().some((l) => l.resource === k)) && (await onReplica.exists(kept)) === 1
      );
    });
    const idsBefore = new Map(locks().map((l) => [l.resource, l.id]));

    // The replica stops; a lock written now never reaches it. (The key is chosen first: a frozen node answers
    // nothing, not even the harness's questions.)
    let stranded = "";
    for (let i = 0; !stranded; i++) {
      const key = `${prefix}:stranded:lock:${i}`;
      if ((await cluster.masterOf(key)).port === m0!.port) stranded = key;
    }
    r0.freeze();
    await c.set(stranded, "tok-stranded", "PX", 120_000);
    await waitFor(
      "the stranded lock flagged not-replicated (by the master's account of the frozen replica)",
      async () => {
        await poll();
        return (
          locks()
            .find((l) => l.resource === stranded)
            ?.hazards.some((h) => h.code === "not-replicated") ?? false
        );
      },
      { timeoutMs: 20_000 },
    );

    // The master crashes; the replica comes back and takes over without it. No poll runs until the agent is
    // asked below, as if the whole failover fell between two polls.
    m0!.process.kill("SIGKILL");
    r0.thaw();
    const promoted = r0.client();
    await waitFor("replica answers again", async () => (await promoted.ping()) === "PONG");
    await promoted.call("CLUSTER", "FAILOVER", "TAKEOVER");
    await waitFor("the replica is a master", async () => ((await promoted.call("ROLE")) as unknown[])[0] === "master");
    // A frozen process still receives into its socket buffer, so the write usually arrives on thaw after all.
    // Deleting it here, before the agent looks, stands for a write that never made it (the case the hazard warned
    // of); the agent cannot tell the two apart, which is the point.
    await promoted.del(stranded);
    await waitFor(
      "the promoted replica watched in place of the dead master",
      async () => {
        await poll();
        return statuses().some((s) => s.id === sourceOf(r0) && s.up) && !statuses().some((s) => s.id === sourceOf(m0!));
      },
      { timeoutMs: 30_000 },
    );
    await waitFor("the kept lock read on the promoted replica", async () => {
      await poll();
      return locks().find((l) => l.resource === kept)?.source === sourceOf(r0);
    });

    const byResource = new Map(locks().map((l) => [l.resource, l]));
    expect(byResource.get(kept)!.id).toBe(idsBefore.get(kept));
    for (const [key, m] of all) {
      if (m.port !== m0!.port)
        expect(byResource.get(key)).toMatchObject({ id: idsBefore.get(key), source: sourceOf(m) });
    }
    expect(byResource.has(stranded)).toBe(false);
    const lost = events.filter((e) => e.resource === stranded && e.type === "lost");
    expect(lost).toHaveLength(1);
    expect(lost[0]!.detail).toMatchObject({ reason: "server-restarted", failoverFrom: sourceOf(m0!) });
    // Nothing else was reported gone or taken, and no lock was acquired twice.
    const mine = events.filter((e) => e.resource.startsWith(`${prefix}:failover:`) || e.resource === stranded);
    expect(mine.filter((e) => e.type !== "acquired" && e.resource !== stranded)).toEqual([]);
    for (const key of all.keys())
      expect(mine.filter((e) => e.resource === key && e.type === "acquired")).toHaveLength(1);
  });
});
