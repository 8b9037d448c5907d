/**
 * Issue 10, item 9: a second agent with the same id took over release commands, and the audit then recorded
 * `released` for a release that never happened.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Lock } from "../../lib/contract/lock";
import type { AuditEntryView, ReleaseResult } from "../../lib/contract/release";
import { connectRawAgent, connected } from "../harness/agent-socket";
import { startRedis, type RedisServer } from "../harness/redis";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc } from "../harness/stack";

let watched: RedisServer;
let elsewhere: RedisServer;
let dashboard: Dashboard;
const agents: Proc[] = [];

beforeAll(async () => {
  [watched, elsewhere] = await Promise.all([startRedis(), startRedis()]);
  dashboard = await startDashboard();
});

afterAll(async () => {
  for (const a of agents) await a.stop();
  await dashboard?.stop();
  dashboard?.cleanup();
  await watched?.stop();
  await elsewhere?.stop();
});

async function waitForOutput(proc: Proc, what: string, pattern: RegExp): Promise<void> {
  await waitFor(what, () => pattern.test(proc.output()), { timeoutMs: 30_000 }).catch((err: unknown) => {
    throw new Error(`${String(err)}\noutput:\n${proc.output().slice(-3000)}`);
  });
}

async function seen(resource: string): Promise<Lock> {
  let found: Lock | undefined;
  await waitFor(`${resource} in the dashboard`, async () => {
    found = (await dashboard.allLocks()).locks.find((l) => l.resource === resource);
    return found !== undefined;
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

async function newestAudit(): Promise<AuditEntryView> {
  const res = await dashboard.request("/api/audit?limit=1", {}, "operator");
  return ((await res.json()) as { entries: AuditEntryView[] }).entries[0]!;
}

describe("one agent per agent id", () => {
  it("refuses a second agent process with the same id; release commands stay with the first", async () => {
    const key = "identity:lock:payments";
    await watched.client().set(key, "worker-9", "PX", 120_000);
    const first = startAgent(dashboard.url, { AGENT_ID: "dc-one", REDIS_URLS: watched.url });
    agents.push(first);
    const lock = await seen(key);
    expect(lock.agentId).toBe("dc-one");

    // Same id by mistake (a copied config), watching another server where the key does not exist.
    const second = startAgent(dashboard.url, { AGENT_ID: "dc-one", REDIS_URLS: elsewhere.url });
    agents.push(second);
    await waitForOutput(
      second,
      "the second agent told why it is refused",
      /dashboard refused this agent: agent id dc-one is already connected from another agent process/,
    );

    const res = await release(lock.id, {
      expectedOwner: "worker-9",
      expectedFingerprint: lock.ownerFingerprint,
      reason: "worker 9 is gone",
      confirm: key,
    });
    const body = (await res.json()) as ReleaseResult;
    expect(body.outcome).toBe("released");
    expect(await watched.client().exists(key)).toBe(0);
    expect(await newestAudit()).toMatchObject({ outcome: "released", resource: key });

    // When the first agent goes away, the refused one keeps retrying and takes the id over.
    await first.stop();
    await waitForOutput(second, "the second agent connected after the first left", /connected to dashboard/);
  });

  it("an agent with a wrong token is refused before its websocket is accepted, and logs the dashboard's reason", async () => {
    const wrong = startAgent(dashboard.url, {
      AGENT_ID: "dc-wrong",
      AGENT_TOKEN: "not-the-agent-token-0123",
      REDIS_URLS: elsewhere.url,
    });
    agents.push(wrong);
    await waitForOutput(
      wrong,
      "the refused agent logged why",
      /cannot reach dashboard: websocket error.*the dashboard says "unauthorised: wrong or missing agent token/,
    );
    await wrong.stop();
  });

  it("lets the same agent process replace a connection the dashboard still thinks is open", async () => {
    const old = connectRawAgent(dashboard.url, { agentId: "dc-raw", instanceId: "process-1" });
    await connected(old);
    let oldReason = "";
    old.on("disconnect", (r) => (oldReason = r));
    // The process lost its connection and dials again before the dashboard noticed the old one is dead.
    const again = connectRawAgent(dashboard.url, { agentId: "dc-raw", instanceId: "process-1" });
    await connected(again);
    await waitFor("the stale connection closed by the dashboard", () => oldReason !== "");
    expect(oldReason).toBe("io server disconnect");

    const other = connectRawAgent(dashboard.url, { agentId: "dc-raw", instanceId: "process-2" });
    await expect(connected(other)).rejects.toThrow(/agent id dc-raw is already connected/);
    again.close();
    await waitFor("the dashboard saw the connection close", async () => {
      const retry = connectRawAgent(dashboard.url, { agentId: "dc-raw", instanceId: "process-2" });
      try {
        await connected(retry);
        return true;
      } catch {
        return false;
      } finally {
        retry.close();
      }
    });
    old.close();
  });
});

describe("an agent's release answer is checked before it is believed", () => {
  it("turns a malformed answer into an error outcome, in the answer and in the audit log", async () => {
    const agent = connectRawAgent(dashboard.url, { agentId: "liar" });
    await connected(agent);
    const at = new Date().toISOString();
    const lock = {
      id: "liarLock1",
      backend: "redis",
      source: "redis://127.0.0.1:1/0",
      resource: "identity:lock:claimed",
      owner: "w1",
      library: "generic",
      rule: "generic",
      ttlMs: null,
      holder: null,
      waiters: [],
      since: at,
      observedAt: at,
      kind: "string",
      valuePreview: "w1",
      hazards: [],
      agentId: "liar",
    };
    const ack = (await agent.timeout(5000).emitWithAck("agent:snapshot", {
      agentId: "liar",
      agentName: "liar",
      version: "1",
      at,
      sources: [],
      locks: [lock],
    })) as {
      ok: boolean;
    };
    expect(ack.ok).toBe(true);
    // Claims success without saying what was deleted where.
    agent.on("release:execute", (_cmd: unknown, reply: (r: unknown) => void) => reply({ outcome: "released" }));

    const res = await release(lock.id, { expectedOwner: "w1", reason: "testing the answer", confirm: lock.resource });
    expect(res.status).toBe(502);
    const body = (await res.json()) as ReleaseResult;
    expect(body.outcome).toBe("error");
    expect(body.message).toContain("agent liar sent an invalid release answer");
    expect(await newestAudit()).toMatchObject({ outcome: "error", lockId: lock.id, actor: "test-operator" });
    agent.close();
  });
});
