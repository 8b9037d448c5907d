import { createServer, type Server as HttpServer } from "node:http";
import { Server, type Socket } from "socket.io";
import { io as connectClient, type Socket as ClientSocket } from "socket.io-client";
import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ReleaseCommand, ReleaseResult } from "../../lib/contract/release";
import { AgentGateway } from "../../lib/server/agent-gateway";
import { connectFanout, type FanoutConnection } from "../../lib/server/fanout";
import { LiveState } from "../../lib/server/live-state";
import { waitFor } from "../harness/ports";
import { startRedis, type RedisServer } from "../harness/redis";

// A release asked of dashboard B for an agent connected to dashboard A, through the socket.io Redis adapter on a
// real redis-server (issue 15: the e2e dry run from B once answered "agent … is not connected" although A held it).
// The adapter counts the other dashboards with PUBSUB NUMSUB of its request channel and, counting none, calls back
// at once with no answer: that is what happens while A's subscriber is not subscribed yet.

const command: ReleaseCommand = {
  requestId: "r1",
  lockId: "L1",
  expectedOwner: "o",
  dryRun: true,
  actor: "test",
  reason: "test release",
};
const agentAnswer: ReleaseResult = {
  outcome: "dry-run",
  message: "would delete L1",
  plan: ["DEL L1 if owner is o"],
  perNode: [],
};

interface Dashboard {
  io: Server;
  live: LiveState;
  agents: AgentGateway;
  fanout: FanoutConnection;
  http?: HttpServer;
  close(): Promise<void>;
}

function dashboard(
  redis: RedisServer,
  name: string,
  retry: { noPeerRetryMs?: number; heardPeerRetryMs?: number } = {},
): Dashboard {
  const agents = new AgentGateway();
  const live = new LiveState();
  const fanout = connectFanout({
    url: redis.url,
    serverId: name,
    live,
    agents,
    log: () => undefined,
    noPeerRetryMs: 4000,
    ...retry,
  });
  const io = new Server({ adapter: fanout.adapter });
  fanout.attach(io);
  return {
    io,
    live,
    agents,
    fanout,
    async close() {
      // Only A is attached to an HTTP server (io.close of an unattached Server throws); not awaited: its callback
      // waits for the HTTP server's idle connections.
      if (this.http) {
        void io.close();
        this.http.closeAllConnections();
      }
      await fanout.close();
    },
  };
}

describe("a release routed to the dashboard holding the agent", () => {
  let redis: RedisServer;
  /** The test's own connection to the fanout Redis (closed by redis.stop()). */
  let admin: Redis;
  const open: Dashboard[] = [];
  const clients: ClientSocket[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    admin = redis.client();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    for (const d of open.splice(0)) await d.close();
  });
  afterAll(async () => {
    await redis.stop();
  });

  /**
   * Dashboard A with a real agent connection (a socket.io client on loopback) that answers release:execute; with
   * `agentAfter`, A is up (and subscribed) first and the agent connects once that promise settles.
   */
  async function dashboardWithAgent(agentId: string, agentAfter?: Promise<unknown>): Promise<Dashboard> {
    const a = dashboard(redis, "A");
    open.push(a);
    const http = createServer();
    a.http = http;
    a.io.attach(http);
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
    const addr = http.address();
    const port = typeof addr === "object" && addr ? addr.port : 0;
    a.io.on("connection", (socket: Socket) => a.agents.add(agentId, socket as never, "instance-1"));
    if (agentAfter) {
      await waitFor("A subscribed", async () => (await numsub(admin)) >= 2);
      await agentAfter;
    }
    const client = connectClient(`http://127.0.0.1:${port}`, { transports: ["websocket"] });
    clients.push(client);
    client.on("release:execute", (_cmd: ReleaseCommand, ack: (r: ReleaseResult) => void) => ack(agentAnswer));
    await waitFor("the agent connected to A", () => a.agents.isConnected(agentId));
    return a;
  }

  it("waits for A's subscription when B counts no other dashboard yet, and gets A's answer", async () => {
    const b = dashboard(redis, "B");
    open.push(b);
    await waitFor("B subscribed", async () => (await numsub(admin)) >= 1);
    // B asks before A exists: the adapter counts none besides B and answers at once with nothing.
    const asking = b.agents.release("agent-on-a", command, 5000);
    await new Promise((r) => setImmediate(r));
    await dashboardWithAgent("agent-on-a");
    expect(await asking).toEqual(agentAnswer);
  });

  it("says no other dashboard is listening, not that the agent is not connected, when none comes", async () => {
    const b = dashboard(redis, "B");
    open.push(b);
    const started = Date.now();
    const result = await b.agents.release("agent-on-a", command, 5000);
    expect(result.outcome).toBe("error");
    expect(result.message).toMatch(/no other dashboard is listening/);
    expect(result.message).not.toMatch(/is not connected/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3500);
  });

  it("keeps asking longer for an agent another dashboard reported recently (its subscriber is only reconnecting)", async () => {
    const a1 = await dashboardWithAgent("agent-on-a");
    const b = dashboard(redis, "B", { noPeerRetryMs: 300, heardPeerRetryMs: 8000 });
    open.push(b);
    await waitFor("A and B subscribed", async () => (await numsub(admin)) >= 2);
    a1.fanout.fanout.snapshot({
      agentId: "agent-on-a",
      agentName: "a",
      version: "1",
      at: new Date().toISOString(),
      sources: [],
      locks: [],
    });
    await waitFor("B heard of the agent from A", () => b.live.agentList().some((x) => x.id === "agent-on-a"));
    // A's dashboard goes (a restart behind the load balancer); B counts no other dashboard now.
    await a1.close();
    open.splice(open.indexOf(a1), 1);
    await waitFor("only B subscribed", async () => (await numsub(admin)) === 1);
    const started = Date.now();
    const asking = b.agents.release("agent-on-a", command, 5000);
    // Past the short window for an agent nobody reported: only the longer one for a heard agent is still asking.
    await new Promise((r) => setTimeout(r, 800));
    await dashboardWithAgent("agent-on-a");
    expect(await asking).toEqual(agentAnswer);
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
  });

  it("asks again while A is up but its agent not back yet, and gets the agent's answer once it is", async () => {
    const b = dashboard(redis, "B", { noPeerRetryMs: 5000 });
    open.push(b);
    let asked!: () => void;
    const askedOnce = new Promise<void>((r) => (asked = r));
    const a = dashboardWithAgent("agent-on-a", askedOnce);
    await waitFor("A and B subscribed", async () => (await numsub(admin)) >= 2);
    const before = await publishes(admin);
    // A answers "not mine" (its agent is not connected yet): B keeps asking instead of saying "not connected".
    const asking = b.agents.release("agent-on-a", command, 5000);
    // B's request and A's answer: two PUBLISHes on the fanout Redis.
    await waitFor("B asked and A answered", async () => (await publishes(admin)) >= before + 2);
    asked();
    await a;
    expect(await asking).toEqual(agentAnswer);
  });

  it("says not connected when every other dashboard answered that it does not hold the agent", async () => {
    await dashboardWithAgent("another-agent");
    const b = dashboard(redis, "B");
    open.push(b);
    await waitFor("A and B subscribed", async () => (await numsub(admin)) >= 2);
    const result = await b.agents.release("agent-on-a", command, 5000);
    expect(result.message).toBe("agent agent-on-a is not connected");
  });
});

/** PUBLISH calls on the fanout Redis so far (INFO commandstats). */
async function publishes(c: Redis): Promise<number> {
  return Number(/cmdstat_publish:calls=(\d+)/.exec(await c.info("commandstats"))?.[1] ?? 0);
}

/** Dashboards subscribed to the release request channel. */
async function numsub(c: Redis): Promise<number> {
  const r = (await c.call("PUBSUB", "NUMSUB", "lockscope-request#/#")) as [string, number];
  return Number(r[1]);
}
