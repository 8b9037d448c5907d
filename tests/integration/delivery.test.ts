import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import type { EventsResponse } from "../../lib/contract/api";
import type { RedisServer } from "../harness/redis";
import { connectRawAgent } from "../harness/agent-socket";
import { startRedisStack, stopStack, TEST_AGENT_TOKEN, waitFor, type Dashboard, type Proc } from "../harness/stack";

let redis: RedisServer;
let dashboard: Dashboard;
let agent: Proc;

beforeAll(async () => {
  ({ redis, dashboard, agent } = await startRedisStack());
});

afterAll(() => stopStack({ redis, dashboard, agent }));

function storedRows(): Array<{ id: string; type: string; resource: string }> {
  const db = new Database(dashboard.databaseUrl.slice("file:".length), { readonly: true });
  try {
    return db.prepare("SELECT id, type, resource FROM Event").all() as Array<{
      id: string;
      type: string;
      resource: string;
    }>;
  } finally {
    db.close();
  }
}

describe("delivery from agent to dashboard", () => {
  it("loses nothing and stores each event once across a dashboard restart and an agent reconnect", async () => {
    const c = redis.client();
    await c.set("delivery:lock:before", "t0", "PX", 60_000);
    await waitFor("first lock stored", async () => storedRows().some((r) => r.resource === "delivery:lock:before"));

    await dashboard.stop();
    // While the dashboard is down the agent keeps watching and buffers what it sees.
    for (let i = 0; i < 5; i++) await c.set(`delivery:lock:during-${i}`, `t${i}`, "PX", 60_000);
    await c.del("delivery:lock:before");
    // The agent logs its pending count while disconnected: wait until it holds all six changes.
    await waitFor(
      "agent buffering the changes while the dashboard is down",
      () => {
        const counts = [...agent.output().matchAll(/dashboard unreachable: (\d+) events pending/g)].map((m) =>
          Number(m[1]),
        );
        return counts.some((n) => n >= 6);
      },
      { timeoutMs: 15_000 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nagent output:\n${agent.output().slice(-3000)}`);
    });

    dashboard = await dashboard.restart();
    await waitFor(
      "buffered events stored after restart",
      async () => {
        const rows = storedRows();
        const during = rows.filter((r) => r.resource.startsWith("delivery:lock:during-") && r.type === "acquired");
        const released = rows.some((r) => r.resource === "delivery:lock:before" && r.type === "released");
        return during.length === 5 && released;
      },
      { timeoutMs: 20_000 },
    );

    const rows = storedRows();
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    const acquiredBefore = rows.filter((r) => r.resource === "delivery:lock:before" && r.type === "acquired");
    expect(acquiredBefore).toHaveLength(1);
    // The live view is rebuilt from the agent's snapshot after the restart.
    const { locks } = await dashboard.allLocks();
    expect(locks.filter((l) => l.resource.startsWith("delivery:lock:during-"))).toHaveLength(5);
    expect(locks.some((l) => l.resource === "delivery:lock:before")).toBe(false);
  });

  it("stores a replayed event once (idempotent on the event id)", async () => {
    const socket = connectRawAgent(dashboard.url, { agentId: "replayer" });
    const event = {
      id: "replayed-event-0001",
      agentId: "replayer",
      type: "acquired",
      lockId: "replayLock",
      backend: "redis",
      source: "redis://127.0.0.1:1/0",
      resource: "replay:lock",
      owner: "x",
      at: new Date().toISOString(),
    };
    const update = {
      agentId: "replayer",
      at: new Date().toISOString(),
      sources: [],
      upserts: [],
      removed: [],
      events: [event],
    };
    const a1 = await socket.timeout(5000).emitWithAck("agent:update", update);
    const a2 = await socket.timeout(5000).emitWithAck("agent:update", update);
    socket.close();
    expect(a1).toMatchObject({ ok: true, stored: ["replayed-event-0001"] });
    expect(a2).toMatchObject({ ok: true, stored: ["replayed-event-0001"] });
    const { events } = await dashboard.get<EventsResponse>("/api/events?resource=replay:lock");
    expect(events).toHaveLength(1);
  });

  it("refuses an agent with a wrong token and an invalid message with a clear error", async () => {
    // The right token in the header gets past the HTTP check; the handshake's own token is checked too.
    const bad = connectRawAgent(dashboard.url, {
      agentId: "x",
      token: "wrong-token-wrong-token",
      headerToken: TEST_AGENT_TOKEN,
    });
    const err = await new Promise<Error>((resolve) => bad.on("connect_error", resolve));
    bad.close();
    expect(err.message).toContain("unauthorised");

    const good = connectRawAgent(dashboard.url, { agentId: "y" });
    const ack = await good.timeout(5000).emitWithAck("agent:update", { agentId: "y", events: "nope" });
    good.close();
    expect(ack.ok).toBe(false);
    expect(ack.error).toMatch(/^invalid update: /);
  });
});
