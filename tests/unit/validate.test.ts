import { describe, expect, it } from "vitest";
import { parseAgentSnapshot, parseAgentUpdate } from "../../lib/contract/validate";

const lock = {
  id: "abc_DEF-123",
  backend: "redis",
  source: "redis://127.0.0.1:1/0",
  resource: "lock:x",
  owner: null,
  library: "generic",
  rule: "r",
  ttlMs: 10,
  holder: { thread: 1 },
  waiters: [],
  since: "2026-01-01T00:00:00.000Z",
  observedAt: "2026-01-01T00:00:00.000Z",
  kind: "string",
  valuePreview: null,
  hazards: [],
  agentId: "a",
};

describe("agent message validation", () => {
  it("accepts a well-formed snapshot", () => {
    const r = parseAgentSnapshot({
      agentId: "a",
      agentName: "a",
      version: "1",
      at: "2026-01-01T00:00:00Z",
      sources: [],
      locks: [lock],
    });
    expect(r.ok).toBe(true);
  });

  const bad: Array<[string, unknown, string]> = [
    ["not an object", "hello", "(root)"],
    ["a lock id that is not URL-safe", { ...upd(), upserts: [{ ...lock, id: "../etc" }] }, "upserts.0.id"],
    ["an unknown backend", { ...upd(), upserts: [{ ...lock, backend: "etcd" }] }, "upserts.0.backend"],
    ["a fractional TTL", { ...upd(), upserts: [{ ...lock, ttlMs: 1.5 }] }, "upserts.0.ttlMs"],
    ["an unknown event type", { ...upd(), events: [{ ...ev(), type: "exploded" }] }, "events.0.type"],
    ["a bad time", { ...upd(), at: "yesterday" }, "at"],
    ["a huge resource name", { ...upd(), upserts: [{ ...lock, resource: "x".repeat(100_000) }] }, "upserts.0.resource"],
  ];
  for (const [name, input, where] of bad) {
    it(`rejects ${name}, naming where`, () => {
      const r = parseAgentUpdate(input);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.startsWith(where)).toBe(true);
    });
  }
});

function upd() {
  return { agentId: "a", at: "2026-01-01T00:00:00Z", sources: [], upserts: [], removed: [], events: [] };
}
function ev() {
  return {
    id: "12345678-aaaa",
    agentId: "a",
    type: "acquired",
    lockId: "L",
    backend: "redis",
    source: "s",
    resource: "r",
    owner: null,
    at: "2026-01-01T00:00:00Z",
  };
}
