import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardLink } from "../../agent/transport/dashboard-link";
import type { AlertsResponse } from "../../lib/contract/alerts";
import type { HealthResponse } from "../../lib/contract/api";
import type { SourceStatus } from "../../lib/contract/lock";
import { startDashboard, TEST_AGENT_TOKEN, waitFor, type Dashboard } from "../harness/stack";

// The agent's link to a real dashboard, in the test process: what it sends before the agent's first poll has
// completed. Under load a first poll of MariaDB took longer than the connection to the dashboard; the snapshot sent
// on connect then showed it "not polled yet" (up: false), and the dashboard raised a critical source-down alert
// for a healthy server (tests/integration/db-locks-stack.test.ts saw it in /api/health).
let dashboard: Dashboard;

beforeAll(async () => {
  dashboard = await startDashboard();
});

afterAll(async () => {
  await dashboard?.stop();
  dashboard?.cleanup();
});

describe("the agent's link before its first poll", () => {
  it("sends nothing until the first poll has read the sources, so a slow first poll is never shown as down", async () => {
    const source = "mysql://127.0.0.1:1";
    let polled = false;
    // Each read of the sources' status, with whether the first poll had completed then.
    const reads: boolean[] = [];
    const status = (): SourceStatus[] => {
      reads.push(polled);
      return [
        polled
          ? { id: source, kind: "mysql", up: true, locks: 0, agentId: "first-poll-agent" }
          : { id: source, kind: "mysql", up: false, error: "not polled yet", locks: 0, agentId: "first-poll-agent" },
      ];
    };
    const link = new DashboardLink({
      dashboardUrl: dashboard.url,
      agentToken: TEST_AGENT_TOKEN,
      agentId: "first-poll-agent",
      agentName: "first-poll-agent",
      version: "test",
      bufferEvents: 100,
      ready: () => polled,
      sources: status,
      locks: () => [],
      log: () => undefined,
      release: async () => ({ outcome: "refused", message: "test", plan: [], perNode: [] }),
    });
    try {
      // The connect handler starts a flush at once: a link that sent state early has read it by now.
      await waitFor("the link connected", () => link.connected);
      await waitFor("the dashboard has the agent", () =>
        dashboard.output().includes("agent first-poll-agent connected"),
      );
      expect(reads).toEqual([]);

      // The first poll completes and publishes (what AgentLoop.pollOnce does): now the state goes out.
      polled = true;
      link.publish([], [], []);
      await waitFor("the source shown up", async () => {
        const h = await dashboard.get<HealthResponse>("/api/health");
        return h.sources.some((s) => s.id === source && s.up);
      });
      expect(reads.every(Boolean)).toBe(true);
      const { alerts } = await dashboard.get<AlertsResponse>("/api/alerts?limit=100");
      expect(alerts.filter((a) => a.rule === "source-down")).toEqual([]);
    } finally {
      link.close();
    }
  });
});
