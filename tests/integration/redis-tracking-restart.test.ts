import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { startRedis, type RedisServer } from "../harness/redis";
import { startInProcessAgent, type InProcessAgent } from "../harness/in-process-agent";
import { waitFor } from "../harness/ports";

/**
 * A server restart that catches the agent half-way through enabling client tracking. ioredis replays, on the new
 * connection, every command the old one had sent and not had answered: a SUBSCRIBE meant for the old invalidation
 * connection subscribed the new one behind the agent's back (CLIENT ID then failed "in subscriber mode" on every
 * retry, and the node polled for good), and a CLIENT TRACKING ... REDIRECT <old id> could point the reader's
 * invalidations at whatever connection of the new server has that id. Made certain here, not left to timing: the
 * bulk-read connection is killed and the server put to sleep in one MULTI, so the enable that the loss starts is
 * sent to a server that will never answer it; the agent's command timeout is longer than the test.
 */
let redis: RedisServer;
let agent: InProcessAgent;
let c: Redis;
const prefix = `trk-restart-${Date.now()}`;

beforeAll(async () => {
  redis = await startRedis();
  c = redis.client();
  agent = await startInProcessAgent(redis.url, { changeDetection: "track", commandTimeoutMs: 60_000 });
});

afterAll(async () => {
  agent?.stop();
  await redis?.stop();
});

const mode = () => agent.loop.statuses()[0]!.changeDetection;

describe("client tracking across a restart that interrupts its enabling", () => {
  it("is live again on the new server, and the reader's invalidations reach the agent", async () => {
    await waitFor("track mode live", () => mode() === "track" && agent.loop.statuses()[0]!.lastScanAt !== undefined);
    const before = `${prefix}:lock:before`;
    await c.set(before, "owner-A", "PX", 60_000);
    await waitFor(`${before} acquired`, () => agent.types(before).join() === "acquired");

    const list = String(await c.call("CLIENT", "LIST"));
    const lean = [...list.matchAll(/id=(\d+) [^\n]*name=lockscope-agent-reads/g)].map((m) => m[1]!);
    expect(lean.length).toBe(1);
    const logged = agent.log.length;
    // Nothing runs between the kill and the sleep: the enable the loss starts is sent to a server that sleeps.
    const asleep = c.multi().call("CLIENT", "KILL", "ID", lean[0]!).call("DEBUG", "SLEEP", "120").exec();
    asleep.catch(() => undefined);
    await waitFor("the agent has seen its bulk-read connection lost", () =>
      agent.log.slice(logged).some((l) => /bulk-read connection was lost/.test(l)),
    );

    const port = redis.port;
    const exited = once(redis.process, "exit");
    redis.process.kill("SIGKILL");
    await exited;
    await redis.stop(); // its clients
    redis = await startRedis([], port);
    c = redis.client();

    await waitFor("track mode live on the new server", () => mode() === "track", {
      timeoutMs: 20_000,
      state: () => agent.log.slice(logged).slice(-6).join(" | "),
    });
    const list2 = String(await c.call("CLIENT", "LIST"));
    expect(list2).toMatch(/name=lockscope-agent-invalidations [^\n]* sub=1 /);
    // The proof that the reader's tracking points at the agent's invalidation connection: a renewal of a key it
    // read is announced (a poll would find it too, but says so).
    const after = `${prefix}:lock:after`;
    await c.set(after, "owner-B", "PX", 60_000);
    await waitFor(`${after} acquired`, () => agent.types(after).join() === "acquired");
    await c.pexpire(after, 90_000);
    await waitFor(`${after} renewed`, () => agent.types(after).join() === "acquired,renewed");
    expect(agent.events.filter((e) => e.resource === after).at(-1)!.detail?.observedBy).toBe("notification");
    expect(agent.log.slice(logged).join("\n")).not.toMatch(/subscriber mode/);
  });
});
