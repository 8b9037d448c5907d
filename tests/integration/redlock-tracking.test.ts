import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import Redlock from "redlock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";
import type { TrackerOutput } from "../../agent/core/tracker";
import { WATCH_ONLY_ACL } from "../../agent/sources/redis/acl-rules";
import { loadRedlockConfig } from "../../agent/sources/redlock/redlock-config";
import { createRedlockSources, type RedlockSources } from "../../agent/sources/redlock/redlock-factory";
import type { RedlockSource } from "../../agent/sources/redlock/redlock-source";
import type { Lock, LockEvent } from "../../lib/contract/lock";
import { lockSchema, sourceSchema } from "../../lib/contract/validate";
import { waitFor } from "../harness/ports";
import { startRedis, type RedisServer } from "../harness/redis";

/**
 * Redlock groups in track mode (CLIENT TRACKING per node) side by side with poll mode: two watchers on the same
 * five real redis-servers, each polled as the agent loop polls it; every change must give the same events and the
 * same quorum view in both.
 */
const TIMEOUT_MS = 300;
const POLL_MS = 200;
const prefix = `rlt-${randomUUID()}`;
const APP_RELEASE = 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end';

interface Watcher {
  mode: "track" | "poll";
  sources: RedlockSources;
  source: RedlockSource;
  events: LockEvent[];
  logs: string[];
  polls: number;
  stop(): void;
}

const servers: RedisServer[] = [];
let clients: Redis[] = [];
let redlock: Redlock;
let track: Watcher;
let poll: Watcher;

function nodeUrls(override: Record<number, string> = {}): string {
  return servers.map((s, i) => override[i] ?? s.url).join(",");
}

/** A watcher of the group, polled every POLL_MS in the background (as agent.ts does), its pushes collected. */
async function watch(
  mode: "track" | "poll",
  urls = nodeUrls(),
  opts: { background?: boolean; sweepMs?: number } = {},
): Promise<Watcher> {
  const events: LockEvent[] = [];
  const logs: string[] = [];
  const collect = (out: TrackerOutput) => {
    events.push(...out.events);
    for (const l of out.upserts) lockSchema.parse(l); // what the dashboard will accept
  };
  const sources = createRedlockSources(loadRedlockConfig({ REDLOCK_NODES: urls }), {
    agentId: `it-${mode}`,
    newId: randomUUID,
    log: (l) => logs.push(l),
    lockPatterns: DEFAULT_LOCK_PATTERNS,
    commandTimeoutMs: TIMEOUT_MS,
    changeDetection: mode,
    sweepMs: opts.sweepMs ?? 600_000,
    push: collect,
  });
  await sources.ready;
  let stopped = false;
  const w: Watcher = {
    mode,
    sources,
    source: sources.sources[0]!,
    events,
    logs,
    polls: 0,
    stop() {
      stopped = true;
      sources.close();
    },
  };
  if (opts.background !== false) {
    void (async () => {
      while (!stopped) {
        collect(await w.source.poll());
        w.polls++;
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    })();
  }
  return w;
}

beforeAll(async () => {
  // One at a time: each takes a free port from the kernel, and two parallel starts could be handed the same one.
  for (let i = 0; i < 5; i++) servers.push(await startRedis());
  clients = servers.map((s) => s.client());
  for (const c of clients) c.on("error", () => undefined);
  redlock = new Redlock(clients, { retryCount: 0 });
  track = await watch("track");
  poll = await watch("poll");
});

afterAll(async () => {
  track?.stop();
  poll?.stop();
  await Promise.all(servers.map((s) => s.stop()));
});

function find(w: Watcher, resource: string): Lock | undefined {
  return w.source.locks().find((l) => l.resource === resource);
}

function types(w: Watcher, resource: string): string[] {
  return w.events.filter((e) => e.resource === resource).map((e) => e.type);
}

function diagnose(w: Watcher, resource: string): string {
  return `${w.mode}: events ${JSON.stringify(types(w, resource))}; lock ${JSON.stringify(find(w, resource)?.quorum)}; status ${JSON.stringify(w.source.status())}\nlog: ${w.logs.join("\n")}`;
}

/** Both watchers reach the same condition; their events for the resource must then be the same. */
async function bothSee(what: string, resource: string, check: (w: Watcher) => boolean, timeoutMs = 10_000) {
  for (const w of [track, poll]) {
    await waitFor(`${what} (${w.mode})`, () => check(w), { timeoutMs }).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${diagnose(w, resource)}`);
    });
  }
  expect(types(track, resource)).toEqual(types(poll, resource));
}

/** The quorum facts that must agree between the modes (not TTLs or latencies, which differ by read time). */
function view(w: Watcher, resource: string) {
  const l = find(w, resource);
  if (!l) return null;
  const q = l.quorum!;
  return {
    owner: l.owner,
    state: q.state,
    votes: q.votes,
    partial: q.partial,
    hazards: l.hazards.map((h) => h.code).sort(),
    perNode: q.perNode.map((n) => ({ present: n.present, token: n.token })),
  };
}

async function sameView(what: string, resource: string, want: (v: ReturnType<typeof view>) => boolean) {
  await bothSee(what, resource, (w) => want(view(w, resource)));
  await waitFor(`${what}: the same view in both modes`, () => {
    return JSON.stringify(view(track, resource)) === JSON.stringify(view(poll, resource));
  }).catch((err: unknown) => {
    throw new Error(
      `${String(err)}\ntrack ${JSON.stringify(view(track, resource))}\npoll ${JSON.stringify(view(poll, resource))}`,
    );
  });
}

const token = () => randomUUID().replace(/-/g, "");

async function onNodes(indexes: number[], key: string, value: string, ttlMs: number): Promise<void> {
  await Promise.all(indexes.map((i) => clients[i]!.set(key, value, "PX", ttlMs)));
}

describe("Redlock group in track mode, compared with poll mode, on five real redis-servers", () => {
  it("tracks every node and says so in the status and /api/health's source status", async () => {
    await waitFor("every node tracked", () => track.source.status().changeDetection === "track");
    const s = sourceSchema.parse(track.source.status());
    expect(s.nodes!.map((n) => n.changeDetection)).toEqual(["track", "track", "track", "track", "track"]);
    expect(poll.source.status().changeDetection).toBe("poll");
    const list = (await clients[0]!.call("CLIENT", "LIST")) as string;
    expect(list).toMatch(/name=lockscope-agent-invalidations .*cmd=subscribe/);
    expect(track.logs.filter((l) => l.includes("change detection: CLIENT TRACKING")).length).toBe(5);
  });

  it("node-redlock acquire, extend and release give the same events in both modes", async () => {
    const resource = `${prefix}:lock:orders`;
    const lock = await redlock.acquire([resource], 10_000);
    await sameView("held on five", resource, (v) => v?.state === "held" && v.votes === 5);
    const extended = await lock.extend(30_000);
    await bothSee("renewed", resource, (w) => types(w, resource).includes("renewed"));
    expect(find(track, resource)!.ttlMs).toBeGreaterThan(10_000);
    await extended.release();
    await bothSee("released", resource, (w) => types(w, resource).includes("released"));
    expect(types(track, resource)).toEqual(["acquired", "renewed", "released"]);
    expect(find(track, resource)).toBeUndefined();
  });

  it("a token on a bare majority, renewed there, then released, as in poll mode", async () => {
    const resource = `${prefix}:lock:majority`;
    const t = token();
    await onNodes([0, 1, 2], resource, t, 20_000);
    await sameView("held on three of five", resource, (v) => v?.votes === 3 && v.owner === t);
    await Promise.all([0, 1, 2].map((i) => clients[i]!.pexpire(resource, 40_000)));
    await bothSee("renewed on the majority", resource, (w) => types(w, resource).includes("renewed"));
    await Promise.all([0, 1, 2].map((i) => clients[i]!.eval(APP_RELEASE, 1, resource, t)));
    await bothSee("released", resource, (w) => types(w, resource).includes("released"));
    expect(types(track, resource)).toEqual(["acquired", "renewed", "released"]);
  });

  it("a minority leftover and the next holder at risk, as in poll mode", async () => {
    const resource = `${prefix}:lock:leftover`;
    await onNodes([0, 1], resource, token(), 30_000);
    await sameView("minority", resource, (v) => v?.state === "minority");
    const lock = await redlock.acquire([resource], 30_000);
    await sameView("at-risk", resource, (v) => v?.state === "at-risk" && v.owner === lock.value);
    expect(view(track, resource)!.hazards).toEqual(["redlock-at-risk", "redlock-minority"]);
    expect(types(track, resource)).toEqual(["acquired", "owner-changed"]);
    await lock.release();
    await Promise.all([0, 1].map((i) => clients[i]!.del(resource)));
    await bothSee("gone", resource, (w) => find(w, resource) === undefined);
  });

  it("sees the expiry at the lease end, by its own re-read, in both modes alike", async () => {
    const resource = `${prefix}:lock:expiring`;
    await onNodes([0, 1, 2, 3, 4], resource, token(), 1500);
    const endsAt = Date.now() + 1500;
    await sameView("held", resource, (v) => v?.state === "held");
    await bothSee("expired", resource, (w) => types(w, resource).includes("expired"));
    expect(types(track, resource)).toEqual(["acquired", "expired"]);
    const expired = track.events.find((e) => e.resource === resource && e.type === "expired")!;
    // The lease-end re-read, or the invalidation the poll-mode watcher's read causes (it makes the server delete
    // the key): both are the server's word, never a guess from the clock.
    expect(["lease-end", "notification", undefined]).toContain(expired.detail?.observedBy);
    expect(Date.parse(expired.at)).toBeGreaterThanOrEqual(endsAt - 50);
  });

  it("without any poll, sees a lease end by its own timer (or the server's announcement), not later", async () => {
    const alone = await watch("track", nodeUrls(), { background: false });
    try {
      const resource = `${prefix}:lock:lease-end`;
      await waitFor("tracked on every node", () => alone.source.status().changeDetection === "track");
      await alone.source.poll(); // the resync after tracking came up
      await onNodes([0, 1, 2, 3, 4], resource, token(), 1500);
      const endsAt = Date.now() + 1500;
      await alone.source.poll(); // finds it (a SCAN step); from here on nothing polls this watcher
      expect(find(alone, resource)?.quorum?.votes).toBe(5);
      await waitFor("expired, pushed between polls", () => types(alone, resource).includes("expired"));
      const expired = alone.events.find((e) => e.resource === resource && e.type === "expired")!;
      expect(["lease-end", "notification"]).toContain(expired.detail?.observedBy);
      expect(Date.parse(expired.at)).toBeGreaterThanOrEqual(endsAt - 50);
      expect(Date.parse(expired.at)).toBeLessThan(endsAt + 1000);
      expect(find(alone, resource)).toBeUndefined();
    } finally {
      alone.stop();
    }
  });

  it("an unchanged Redlock lock is not re-read between sweeps (INFO commandstats on each node)", async () => {
    // Watchers of their own, polled here only: the background ones would count too.
    const quietTrack = await watch("track", nodeUrls(), { background: false });
    const quietPoll = await watch("poll", nodeUrls(), { background: false });
    try {
      const keys = Array.from({ length: 20 }, (_, i) => `${prefix}:quiet:lock:${i}`);
      for (const k of keys) await onNodes([0, 1, 2, 3, 4], k, token(), 600_000);
      for (const w of [quietTrack, quietPoll]) {
        await waitFor(`${w.mode}: 20 quiet locks`, async () => {
          await w.source.poll();
          return keys.every((k) => find(w, k) !== undefined);
        });
      }
      await waitFor("tracked on every node", () => quietTrack.source.status().changeDetection === "track");
      // One poll reads everything after the tracking came up (the resync); after it, only announced keys.
      await quietTrack.source.poll();
      const count = async (w: Watcher) => {
        await Promise.all(clients.map((c) => c.config("RESETSTAT")));
        for (let i = 0; i < 5; i++) await w.source.poll();
        return Promise.all(clients.map(async (c) => commandCalls(await c.info("commandstats"))));
      };
      // A node is read in full after a poll it did not answer in time or after its tracking reconnected (a resync),
      // and on a loaded 2-core machine one can fall inside a window (a full run saw 104 reads on node 0 once): one of
      // three windows must show no reads at all. Unchanged locks re-read in every window still fail.
      const reads = (calls: Map<string, number>) => READS.reduce((n, cmd) => n + (calls.get(cmd) ?? 0), 0);
      let tracked = await count(quietTrack);
      for (let window = 1; window < 3 && tracked.some((calls) => reads(calls) > 0); window++) {
        console.log(`window ${window}: reads per node ${tracked.map(reads).join(", ")}; measuring again`);
        tracked = await count(quietTrack);
      }
      const polled = await count(quietPoll);
      for (const [i, calls] of tracked.entries()) {
        expect(reads(calls), `reads on node ${i}, track`).toBe(0);
        expect(calls.get("scan") ?? 0, `SCAN on node ${i}`).toBeGreaterThan(0); // discovery still runs
      }
      for (const [i, calls] of polled.entries()) {
        // At least the 20 quiet locks (plus the other tests' keys) times three reads, five times.
        expect(
          READS.reduce((n, cmd) => n + (calls.get(cmd) ?? 0), 0),
          `reads on node ${i}, poll`,
        ).toBeGreaterThan(5 * 20 * 3);
      }
      for (const k of keys) await Promise.all(clients.map((c) => c.del(k)));
    } finally {
      quietTrack.stop();
      quietPoll.stop();
    }
  });

  it("a node refusing CLIENT TRACKING (ACL) is polled, says so once, and the group still gives the same events", async () => {
    const noTracking = WATCH_ONLY_ACL.split(" ").filter((x) => x !== "+client|tracking");
    await clients[4]!.call("ACL", "SETUSER", "notrack", "on", ">notrack-secret", ...noTracking);
    const url = `redis://notrack:notrack-secret@127.0.0.1:${servers[4]!.port}`;
    const acl = await watch("track", nodeUrls({ 4: url }));
    try {
      await waitFor("four tracked, one polled", () => {
        const nodes = acl.source.status().nodes ?? [];
        return nodes.filter((n) => n.changeDetection === "track").length === 4 && nodes[4]?.changeDetection === "poll";
      });
      const s = sourceSchema.parse(acl.source.status());
      expect(s.changeDetection).toBe("poll");
      expect(s.note).toMatch(/not live on 1 of 5 nodes/);
      expect(s.nodes![4]!.note).toMatch(/NOPERM.*grant \+client\|tracking/);
      const refusals = acl.logs.filter((l) => /CLIENT TRACKING refused/.test(l));
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toMatch(/falls back to polling/);

      const resource = `${prefix}:lock:acl`;
      const lock = await redlock.acquire([resource], 10_000);
      await waitFor("held on five (acl watcher)", () => find(acl, resource)?.quorum?.votes === 5);
      await sameView("held on five", resource, (v) => v?.votes === 5);
      // A change on the polled node alone is seen too: only its poll can see it.
      await clients[4]!.pexpire(resource, 60_000);
      await waitFor("node 4's new TTL seen", () => (find(acl, resource)?.quorum?.perNode[4]?.ttlMs ?? 0) > 30_000);
      await lock.release();
      await waitFor("released (acl watcher)", () => types(acl, resource).includes("released"));
      await bothSee("released", resource, (w) => types(w, resource).includes("released"));
      expect(types(acl, resource)).toEqual(types(poll, resource));
      expect(acl.logs.filter((l) => /CLIENT TRACKING refused/.test(l))).toHaveLength(1);
    } finally {
      acl.stop();
    }
  });

  // Freezes, kills and restarts nodes: runs last.
  it("a frozen node and a killed one coming back: the same views and events, tracking re-enabled", async () => {
    const resource = `${prefix}:lock:failover`;
    const lock = await redlock.acquire([resource], 60_000);
    await sameView("held on five", resource, (v) => v?.votes === 5);

    servers[0]!.freeze();
    await sameView("partial with node 0 frozen", resource, (v) => v?.partial === true && v.votes === 4);
    servers[0]!.thaw();
    await sameView("whole again", resource, (v) => v?.partial === false && v.votes === 5);

    const port = servers[3]!.port;
    servers[3]!.process.kill("SIGKILL");
    await sameView("node 3 gone", resource, (v) => v?.partial === true && v.votes === 4);
    await waitFor("node 3 polled while down", () => track.source.status().nodes?.[3]?.changeDetection === "poll");
    // Back empty on the same port: its key is lost, the lock still holds on four.
    servers[3] = await startRedis([], port);
    clients[3] = servers[3].client();
    clients[3].on("error", () => undefined);
    await waitFor("node 3 tracked again", () => track.source.status().nodes?.[3]?.changeDetection === "track", {
      timeoutMs: 15_000,
    });
    await sameView("node 3 back without the key", resource, (v) => v?.partial === false && v.votes === 4);
    // A change after it came back is announced by it too.
    const t = token();
    await clients[3].set(resource, t, "PX", 60_000);
    await sameView("node 3's own token", resource, (v) => v?.perNode[3]?.token === t);
    expect(types(track, resource)).toEqual(["acquired"]);
    expect(types(track, resource)).toEqual(types(poll, resource));
    await lock.release().catch(() => undefined);
  });
});

const READS = ["type", "pttl", "strlen", "getrange"];

/** INFO commandstats as calls per command. Sample line: cmdstat_pttl:calls=3,usec=5,usec_per_call=1.67,... */
function commandCalls(info: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}
