import { describe, expect, it } from "vitest";
import { AgentLoop } from "../../agent/agent";
import type { WatchedSource } from "../../agent/sources/source-port";
import type { SourceStatus } from "../../lib/contract/lock";

/** A source whose reachability the test sets. */
function fakeSource(id: string): WatchedSource & { up: boolean } {
  const s = {
    up: true,
    status: (): SourceStatus => ({ id, kind: "redis", up: s.up, locks: 0, agentId: "a1" }),
    poll: async () => ({ events: [], upserts: [], removed: [] }),
    locks: () => [],
  };
  return s;
}

describe("AgentLoop: each source's last poll time, for stale marking", () => {
  it("stamps lastPollAt when a poll completes while the source is up, and stops stamping while it is down", async () => {
    const src = fakeSource("redis://127.0.0.1:1/0");
    const loop = new AgentLoop(
      [src],
      { publish: () => undefined },
      { agentId: "a1", pollIntervalMs: 1000, log: () => undefined },
    );
    expect(loop.statuses()[0]).toMatchObject({ pollIntervalMs: 1000 });
    expect(loop.statuses()[0]!.lastPollAt).toBeUndefined();
    const before = Date.now();
    await loop.pollOnce();
    const first = loop.statuses()[0]!.lastPollAt!;
    expect(Date.parse(first)).toBeGreaterThanOrEqual(before);
    // a source that is down completes no read: it gets no poll time
    const down = fakeSource("redis://127.0.0.1:2/0");
    down.up = false;
    const loop2 = new AgentLoop(
      [down],
      { publish: () => undefined },
      { agentId: "a1", pollIntervalMs: 1000, log: () => undefined },
    );
    await loop2.pollOnce();
    expect(loop2.statuses()[0]!.lastPollAt).toBeUndefined();
  });
});
