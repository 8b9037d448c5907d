import { describe, expect, it } from "vitest";
import type { Lock } from "../../lib/contract/lock";
import { LiveState } from "../../lib/server/live-state";

const lock = (id: string, ttlMs: number | null): Lock => ({
  id,
  backend: "redis",
  source: "redis://127.0.0.1:1/0",
  resource: id,
  owner: "o",
  library: "generic",
  rule: "r",
  ttlMs,
  holder: null,
  waiters: [],
  since: new Date(0).toISOString(),
  observedAt: new Date(0).toISOString(),
  kind: "string",
  valuePreview: null,
  hazards: [],
  agentId: "a1",
});

describe("LiveState", () => {
  it("recomputes TTLs against its own clock since receipt", () => {
    let now = 1000;
    const s = new LiveState(() => now);
    s.applySnapshot({
      agentId: "a1",
      agentName: "a1",
      version: "x",
      at: "",
      sources: [],
      locks: [lock("L1", 5000), lock("L2", null)],
    });
    now = 3000;
    expect(s.lock("L1")!.ttlMs).toBe(3000);
    expect(s.lock("L2")!.ttlMs).toBeNull();
    now = 99_000;
    expect(s.lock("L1")!.ttlMs).toBe(0);
  });

  it("a snapshot replaces the agent's locks and reports the ones that went", () => {
    const s = new LiveState();
    s.applySnapshot({
      agentId: "a1",
      agentName: "a1",
      version: "x",
      at: "",
      sources: [],
      locks: [lock("L1", 1), lock("L2", 1)],
    });
    const d = s.applySnapshot({
      agentId: "a1",
      agentName: "a1",
      version: "x",
      at: "",
      sources: [],
      locks: [lock("L2", 1)],
    });
    expect(d.removed).toEqual(["L1"]);
    expect(s.locks().map((l) => l.id)).toEqual(["L2"]);
  });

  it("updates patch, and a disconnect keeps locks but marks sources down", () => {
    const s = new LiveState();
    const src = { id: "redis://x", kind: "redis" as const, up: true, locks: 1, agentId: "a1" };
    s.applyUpdate({ agentId: "a1", at: "", sources: [src], upserts: [lock("L1", 1)], removed: [], events: [] });
    s.applyUpdate({ agentId: "a1", at: "", sources: [src], upserts: [lock("L3", 1)], removed: ["L1"], events: [] });
    expect(s.locks().map((l) => l.id)).toEqual(["L3"]);
    s.disconnect("a1");
    expect(s.locks()).toHaveLength(1);
    expect(s.sources()[0]).toMatchObject({ up: false, error: "agent a1 disconnected" });
    expect(s.agentList()[0]!.connected).toBe(false);
  });
});
