import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bothSee as bothAgentsSee, startInProcessAgent, type InProcessAgent } from "../harness/in-process-agent";
import { waitFor } from "../harness/ports";
import type { RedisServer } from "../harness/redis";
import { startRedisCluster, type RedisClusterServers } from "../harness/redis-cluster";

/** Client tracking per cluster master, following a failover, compared with polling on the same cluster. */
let cluster: RedisClusterServers;
let track: InProcessAgent;
let poll: InProcessAgent;
const prefix = `clt-${Date.now()}`;
const sourceOf = (s: RedisServer) => `redis://127.0.0.1:${s.port}/0`;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicaOf: [0] });
  track = await startInProcessAgent(cluster.seedUrl, { changeDetection: "track" });
  poll = await startInProcessAgent(cluster.seedUrl, { changeDetection: "poll" });
});

afterAll(async () => {
  track?.stop();
  poll?.stop();
  await cluster?.stop();
});

const bothSee = (resource: string, want: string[], timeoutMs = 15_000) =>
  bothAgentsSee(track, poll, resource, want, timeoutMs);

/** One lock key per master. */
async function keysOnEveryMaster(tag: string): Promise<Map<string, RedisServer>> {
  const c = cluster.client();
  const out = new Map<string, RedisServer>();
  for (let i = 0; out.size < cluster.masters.length && i < 200; i++) {
    const key = `${prefix}:${tag}:lock:${i}`;
    const m = await cluster.masterOf(key);
    if ([...out.values()].some((x) => x.port === m.port)) continue;
    out.set(key, m);
  }
  for (const key of out.keys()) await c.set(key, "owner-1", "PX", 120_000);
  return out;
}

describe("client tracking on a Redis Cluster", () => {
  it("tracks on every master: the same events as polling, seen from the server's invalidations", async () => {
    await waitFor("every master in track mode", () => {
      const s = track.loop.statuses();
      return s.length === 3 && s.every((x) => x.up && x.changeDetection === "track");
    });
    expect(poll.loop.statuses().every((s) => s.changeDetection === "poll")).toBe(true);
    const keys = await keysOnEveryMaster("changes");
    const c = cluster.client();
    for (const key of keys.keys()) await bothSee(key, ["acquired"]);
    for (const key of keys.keys()) await c.pexpire(key, 180_000);
    for (const key of keys.keys()) await bothSee(key, ["acquired", "renewed"]);
    for (const key of keys.keys()) await c.set(key, "owner-2", "PX", 180_000);
    for (const key of keys.keys()) await bothSee(key, ["acquired", "renewed", "owner-changed"]);
    for (const key of keys.keys()) await c.del(key);
    for (const key of keys.keys()) await bothSee(key, ["acquired", "renewed", "owner-changed", "released"]);
    for (const key of keys.keys()) {
      const seen = track.events.filter((e) => e.resource === key && e.type !== "acquired");
      expect(seen.map((e) => e.detail?.observedBy)).toEqual(["notification", "notification", "notification"]);
    }
  });

  it("follows a failover: tracking is enabled on the promoted replica and its locks' changes are announced", async () => {
    const [m0] = cluster.masters;
    const r0 = cluster.replicas[0]!;
    let key = "";
    for (let i = 0; !key; i++) {
      const k = `${prefix}:failover:lock:${i}`;
      if ((await cluster.masterOf(k)).port === m0!.port) key = k;
    }
    const c = cluster.client();
    await c.set(key, "owner-A", "PX", 120_000);
    await bothSee(key, ["acquired"]);
    const onReplica = r0.client();
    await onReplica.call("READONLY");
    await waitFor("the lock on the replica", async () => (await onReplica.exists(key)) === 1);
    m0!.process.kill("SIGKILL");
    const promoted = r0.client();
    await promoted.call("CLUSTER", "FAILOVER", "TAKEOVER");
    await waitFor("the replica is a master", async () => ((await promoted.call("ROLE")) as unknown[])[0] === "master");
    await waitFor(
      "the promoted replica watched in track mode",
      () => track.loop.statuses().some((s) => s.id === sourceOf(r0) && s.up && s.changeDetection === "track"),
      { timeoutMs: 30_000 },
    ).catch((err: Error) => {
      // What the agent saw, for the failure message: its sources and its last log lines.
      const seen = track.loop.statuses().map((s) => `${s.id} up=${s.up} ${s.changeDetection} ${s.error ?? ""}`);
      throw new Error(`${err.message}\nstatuses: ${seen.join("; ")}\nlog: ${track.log.slice(-20).join("\n")}`);
    });
    await waitFor("poll mode follows too", () => poll.loop.statuses().some((s) => s.id === sourceOf(r0) && s.up), {
      timeoutMs: 30_000,
    });
    // Tracking went live, then the next poll re-reads every known lock once on the new master (what changed while
    // nothing tracked them is unknown): from then on its changes are announced.
    const polls = track.loop.polls;
    await waitFor("two more polls", () => track.loop.polls >= polls + 2);
    await promoted.set(key, "owner-B", "PX", 120_000);
    await bothSee(key, ["acquired", "owner-changed"], 20_000);
    const last = track.events.filter((e) => e.resource === key).at(-1)!;
    expect(last.source).toBe(sourceOf(r0));
    expect(last.detail?.observedBy).toBe("notification");
  });
});
