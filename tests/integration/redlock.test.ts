import { randomUUID } from "node:crypto";
import Redlock from "redlock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";
import { loadRedlockConfig } from "../../agent/sources/redlock/redlock-config";
import { createRedlockSources, type RedlockSources } from "../../agent/sources/redlock/redlock-factory";
import type { RedlockSource } from "../../agent/sources/redlock/redlock-source";
import type { Lock, LockEvent, LockEventType } from "../../lib/contract/lock";
import { lockSchema } from "../../lib/contract/validate";
import { waitFor } from "../harness/ports";
import { startRedis, type RedisServer } from "../harness/redis";

/** Per-node deadline of the agent's clients: short, so the frozen-node cases stay quick. */
const TIMEOUT_MS = 300;
const prefix = `test-${randomUUID()}`;

const servers: RedisServer[] = [];
let watch: RedlockSources;
let source: RedlockSource;
let redlock: Redlock;
/** The test's own client per node (not the agent's). */
let clients: ReturnType<RedisServer["client"]>[] = [];
const events: LockEvent[] = [];
const logs: string[] = [];

beforeAll(async () => {
  // One at a time: each takes a free port from the kernel, and two parallel starts could be handed the same one.
  for (let i = 0; i < 5; i++) servers.push(await startRedis());
  const config = loadRedlockConfig({ REDLOCK_NODES: servers.map((s) => s.url).join(",") });
  watch = createRedlockSources(config, {
    agentId: "it-agent",
    newId: randomUUID,
    log: (l) => logs.push(l),
    lockPatterns: DEFAULT_LOCK_PATTERNS,
    commandTimeoutMs: TIMEOUT_MS,
  });
  source = watch.sources[0]!;
  await watch.ready;
  // The real client, as applications use it: one ioredis client per master. No retries, so a test sees at once
  // what one attempt does.
  clients = servers.map((s) => s.client());
  // The failover test kills a node: its reconnect errors are expected, not worth an "unhandled error" line each.
  for (const c of clients) c.on("error", () => undefined);
  redlock = new Redlock(clients, { retryCount: 0 });
});

afterAll(async () => {
  watch?.close();
  await Promise.all(servers.map((s) => s.stop()));
});

function find(resource: string): Lock | undefined {
  return source.locks().find((l) => l.resource === resource);
}

function typesFor(resource: string): LockEventType[] {
  return events.filter((e) => e.resource === resource).map((e) => e.type);
}

/** Polls the source (as the agent loop would) until the condition holds; keeps every event. */
async function pollUntil(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  await waitFor(
    what,
    async () => {
      const out = await source.poll();
      events.push(...out.events);
      for (const l of out.upserts) lockSchema.parse(l); // what the dashboard will accept
      return check();
    },
    { timeoutMs },
  ).catch((err: unknown) => {
    throw new Error(
      `${String(err)}\nlocks: ${JSON.stringify(source.locks(), null, 1).slice(0, 3000)}\nlog: ${logs.join("\n")}`,
    );
  });
}

async function onNodes(indexes: number[], key: string, value: string, ttlMs: number): Promise<void> {
  await Promise.all(indexes.map((i) => clients[i]!.set(key, value, "PX", ttlMs)));
}

describe("Redlock group of five real redis-servers", () => {
  it("follows a node-redlock lock through acquire, extend and release", async () => {
    const resource = `${prefix}:lock:orders`;
    const lock = await redlock.acquire([resource], 10_000);
    // node-redlock's acquire resolves once a majority has said yes; the last nodes' SETs may land a poll later, so
    // a poll right after it may truly see 4 of 5 (a CI run did).
    await pollUntil("the lock held on five nodes", () => {
      const q = find(resource)?.quorum;
      return q?.state === "held" && q.votes === 5;
    });
    const seen = find(resource)!;
    expect(seen).toMatchObject({
      backend: "redlock",
      source: "default",
      owner: lock.value,
      library: "node-redlock",
      rule: "redlock-32-hex-token",
      quorum: { group: "default", votes: 5, nodes: 5, needed: 3, partial: false },
    });
    expect(seen.quorum!.validityMs).toBeLessThanOrEqual(10_000 - 102);
    expect(seen.quorum!.validityMs).toBeGreaterThan(5_000);
    expect(seen.quorum!.perNode.every((n) => n.state === "up" && n.present && n.token === lock.value)).toBe(true);
    expect(source.status()).toMatchObject({ id: "default", kind: "redlock", up: true });

    const extended = await lock.extend(30_000);
    await pollUntil("the extension seen as a renewal", () => typesFor(resource).includes("renewed"));
    expect(find(resource)!.ttlMs).toBeGreaterThan(10_000);

    await extended.release();
    await pollUntil("the release", () => typesFor(resource).includes("released"));
    expect(typesFor(resource)).toEqual(["acquired", "renewed", "released"]);
    expect(find(resource)).toBeUndefined();
  });

  it("finds a node-redlock lock whose name matches no lock pattern, by its 32-hex value", async () => {
    const resource = `${prefix}:orders/42`;
    const lock = await redlock.acquire([resource], 10_000);
    await pollUntil("the lock found by value", () => find(resource)?.owner === lock.value);
    await lock.release();
    await pollUntil("its release", () => typesFor(resource).includes("released"));
  });

  it("shows a token on two of five nodes as a minority leftover, and the next holder as at-risk", async () => {
    const resource = `${prefix}:lock:leftover`;
    const stale = randomUUID().replace(/-/g, "");
    await onNodes([0, 1], resource, stale, 30_000);
    await pollUntil("minority", () => find(resource)?.quorum?.state === "minority");
    expect(find(resource)!.hazards.map((h) => h.code)).toEqual(["redlock-minority"]);
    expect(find(resource)!.quorum!.votes).toBe(2);

    // node-redlock gets the three free nodes: a quorum, but with no spare while the leftover sits on the others.
    const lock = await redlock.acquire([resource], 30_000);
    await pollUntil("the new holder, at-risk", () => find(resource)?.owner === lock.value);
    const seen = find(resource)!;
    expect(seen.quorum).toMatchObject({ state: "at-risk", votes: 3 });
    expect(seen.hazards.map((h) => h.code).sort()).toEqual(["redlock-at-risk", "redlock-minority"]);
    expect(typesFor(resource)).toEqual(["acquired", "owner-changed"]);
    await lock.release();
  });

  it("shows two tokens that split the nodes", async () => {
    const resource = `${prefix}:lock:split`;
    await onNodes([0, 1], resource, "a".repeat(32), 30_000);
    await onNodes([2, 3], resource, "b".repeat(32), 30_000);
    await pollUntil("split", () => find(resource)?.quorum?.state === "split");
    expect(find(resource)!.hazards.map((h) => h.code)).toEqual(["redlock-split"]);
  });

  it("measures every node's latency and clock; loopback clocks agree", async () => {
    await pollUntil("health of all five", () => source.health().answering === 5);
    const h = source.health();
    expect(h.nodes.every((n) => n.state === "up" && n.latencyMs !== undefined && n.clockOffsetMs !== undefined)).toBe(
      true,
    );
    // One machine, one clock: whatever skew is measured is round-trip noise, below any drift allowance.
    expect(h.skew!.lowerBoundMs).toBeLessThan(2);
  });

  it("raises the clock-skew hazard for a node whose clock runs ahead (offset hook)", async () => {
    const resource = `${prefix}:lock:skew`;
    const config = loadRedlockConfig({ REDLOCK_NODES: servers.map((s) => s.url).join(",") });
    const ahead = config.groups[0]!.nodes[3]!.id;
    const skewed = createRedlockSources(config, {
      agentId: "it-agent",
      newId: randomUUID,
      log: () => undefined,
      lockPatterns: DEFAULT_LOCK_PATTERNS,
      commandTimeoutMs: TIMEOUT_MS,
      source: { clockOffsetMs: { [ahead]: 80 } },
    });
    try {
      await skewed.ready;
      const lock = await redlock.acquire([resource], 10_000);
      const s = skewed.sources[0]!;
      let hazard: string | undefined;
      await waitFor("skew hazard", async () => {
        await s.poll();
        hazard = s
          .locks()
          .find((l) => l.resource === resource)
          ?.hazards.find((x) => x.code === "redlock-clock-skew")?.severity;
        return hazard !== undefined;
      });
      // 80 ms against a 102 ms allowance: over half, not all of it.
      expect(hazard).toBe("warning");
      await lock.release();
    } finally {
      skewed.close();
    }
  });

  // Freezes and kills nodes: runs last.
  it("frozen and killed nodes drive the view held -> at-risk -> quorum-lost, without stalling the poll", async () => {
    const resource = `${prefix}:lock:failover`;
    const lock = await redlock.acquire([resource], 60_000);
    await pollUntil("held on five", () => find(resource)?.quorum?.votes === 5);

    servers[0]!.freeze();
    const started = performance.now();
    const out = await source.poll();
    const took = performance.now() - started;
    events.push(...out.events);
    // The frozen node is cut at its deadline; the others answer in milliseconds.
    expect(took).toBeLessThan(TIMEOUT_MS + 700);
    let seen = find(resource)!;
    expect(seen.quorum).toMatchObject({ partial: true, votes: 4, state: "held" });
    expect(["slow", "down"]).toContain(seen.quorum!.perNode[0]!.state);
    expect(seen.quorum!.perNode[0]!.error).toMatch(/no answer within 300 ms/);
    expect(seen.hazards.map((h) => h.code)).toEqual(["redlock-node-down"]);

    servers[1]!.freeze();
    await pollUntil("at-risk with two nodes frozen", () => find(resource)?.quorum?.state === "at-risk");
    expect(find(resource)!.quorum!.votes).toBe(3);

    servers[2]!.process.kill("SIGKILL");
    await pollUntil("quorum-lost with a third node killed", () => find(resource)?.quorum?.state === "quorum-lost");
    seen = find(resource)!;
    expect(seen.quorum).toMatchObject({ votes: 2, partial: true });
    expect(seen.hazards.find((h) => h.code === "redlock-quorum-lost")?.severity).toBe("critical");
    await pollUntil("the killed node marked down with the connection's reason", () => {
      const n = find(resource)!.quorum!.perNode[2]!;
      return n.state === "down" && /ECONNREFUSED|closed/i.test(n.error ?? "");
    });
    expect(source.status().up).toBe(false);
    expect(source.status().error).toContain(servers[2]!.url.replace("redis://", ""));
    // None of this was a release: the lock is still there for the nodes that hold it.
    expect(typesFor(resource)).toEqual(["acquired"]);

    servers[0]!.thaw();
    servers[1]!.thaw();
    await pollUntil("quorum back with the thawed nodes", () => find(resource)?.quorum?.state === "held");
    expect(find(resource)!.quorum!.votes).toBe(4);
    await lock.release().catch(() => undefined); // one node is gone: node-redlock still reaches a majority
  });
});
