import { describe, expect, it } from "vitest";
import {
  isPlainEvent,
  isPlainLock,
  parseAgentSnapshot,
  parseAgentSnapshotBySchema,
  parseAgentUpdate,
  parseAgentUpdateBySchema,
} from "../../lib/contract/validate";

const lock = () => ({
  id: "abc_DEF-123",
  backend: "redis",
  source: "redis://127.0.0.1:1/0",
  resource: "lock:x",
  owner: "tok",
  library: "generic",
  rule: "r",
  ttlMs: 10,
  holder: { thread: 1, host: "h", reentrant: true },
  waiters: [{ owner: "w", since: "2026-01-01T00:00:00.000Z" }],
  since: "2026-01-01T00:00:00.000Z",
  observedAt: "2026-01-01T00:00:00.000Z",
  kind: "string",
  valuePreview: null,
  hazards: [{ code: "no-ttl", severity: "warning", message: "m" }],
  agentId: "a",
});
const ev = () => ({
  id: "12345678-aaaa",
  agentId: "a",
  type: "released",
  lockId: "L",
  backend: "redis",
  source: "s",
  resource: "r",
  owner: null,
  previousOwner: "p",
  library: "generic",
  ttlMs: 30_000,
  at: "2026-01-01T00:00:00Z",
  detail: { observedBy: "poll", heldMs: 1500, afterExpiry: false, reason: null },
});
const upd = (events: unknown[], upserts: unknown[]) => ({
  agentId: "a",
  at: "2026-01-01T00:00:00Z",
  sources: [],
  upserts,
  removed: [],
  events,
});

// Each: a change to one event or lock, some accepted by the schema, most not.
const eventCases: Array<[string, (e: Record<string, unknown>) => void]> = [
  ["as is", () => undefined],
  ["no optional fields", (e) => ["previousOwner", "library", "ttlMs", "detail"].forEach((k) => delete e[k])],
  ["null ttl and previous owner", (e) => Object.assign(e, { ttlMs: null, previousOwner: null })],
  ["an unknown field (stripped by the schema)", (e) => (e.extra = 1)],
  ["a short id", (e) => (e.id = "1234567")],
  ["a long id", (e) => (e.id = "x".repeat(65))],
  ["an unknown type", (e) => (e.type = "exploded")],
  ["an unknown backend", (e) => (e.backend = "etcd")],
  ["a missing owner", (e) => delete e.owner],
  ["a numeric owner", (e) => (e.owner = 5)],
  ["a fractional ttl", (e) => (e.ttlMs = 1.5)],
  ["an unsafe integer ttl", (e) => (e.ttlMs = 2 ** 60)],
  ["a bad time", (e) => (e.at = "yesterday")],
  ["a long time", (e) => (e.at = `2026-01-01T00:00:00Z${" ".repeat(30)}`)],
  ["a huge resource", (e) => (e.resource = "x".repeat(5000))],
  ["a nested detail", (e) => (e.detail = { a: { b: 1 } })],
  ["a long detail key", (e) => (e.detail = { ["k".repeat(65)]: 1 })],
  ["an array detail", (e) => (e.detail = [1])],
  ["a long library", (e) => (e.library = "l".repeat(65))],
  ["a null event", (e) => Object.keys(e).forEach((k) => delete e[k])],
];
const lockCases: Array<[string, (l: Record<string, unknown>) => void]> = [
  ["as is", () => undefined],
  ["null holder, no waiters", (l) => Object.assign(l, { holder: null, waiters: [], owner: null })],
  ["holders and a total", (l) => Object.assign(l, { holders: [{ owner: "o", ttlMs: null }], holdersTotal: 3 })],
  ["a fingerprint", (l) => (l.ownerFingerprint = "f".repeat(80))],
  ["a long fingerprint", (l) => (l.ownerFingerprint = "f".repeat(81))],
  ["a negative holders total", (l) => (l.holdersTotal = -1)],
  ["a quorum view (schema only)", (l) => (l.quorum = { group: "g" })],
  ["an id that is not URL-safe", (l) => (l.id = "../etc")],
  ["an empty id", (l) => (l.id = "")],
  ["a fractional ttl", (l) => (l.ttlMs = 1.5)],
  ["a missing ttl", (l) => delete l.ttlMs],
  ["a missing holder", (l) => delete l.holder],
  ["a holder with an object value", (l) => (l.holder = { a: {} })],
  ["a waiter with a bad time", (l) => (l.waiters = [{ owner: "w", since: "soon" }])],
  ["a waiter with an unknown field", (l) => (l.waiters = [{ owner: "w", extra: 1 }])],
  ["an unknown severity", (l) => (l.hazards = [{ code: "c", severity: "dire", message: "m" }])],
  [
    "65 hazards",
    (l) => (l.hazards = Array.from({ length: 65 }, () => ({ code: "c", severity: "info", message: "m" }))),
  ],
  ["a long kind", (l) => (l.kind = "k".repeat(33))],
  ["an unknown field", (l) => (l.extra = true)],
];

describe("the fast paths for agent messages agree with the schemas", () => {
  for (const [name, change] of eventCases) {
    it(`an event with ${name}`, () => {
      const e: Record<string, unknown> = ev();
      change(e);
      const input = upd([ev(), e], []);
      expect(parseAgentUpdate(structuredClone(input))).toEqual(parseAgentUpdateBySchema(structuredClone(input)));
    });
  }
  for (const [name, change] of lockCases) {
    it(`a lock with ${name}`, () => {
      const l: Record<string, unknown> = lock();
      change(l);
      const input = upd([], [lock(), l]);
      expect(parseAgentUpdate(structuredClone(input))).toEqual(parseAgentUpdateBySchema(structuredClone(input)));
      const snap = { agentId: "a", agentName: "a", version: "1", at: "2026-01-01T00:00:00Z", sources: [], locks: [l] };
      expect(parseAgentSnapshot(structuredClone(snap))).toEqual(parseAgentSnapshotBySchema(structuredClone(snap)));
    });
  }

  it("takes the fast path for the events and locks the agent sends, and not for what it does not know", () => {
    expect(isPlainEvent(ev())).toBe(true);
    expect(isPlainLock(lock())).toBe(true);
    expect(isPlainLock({ ...lock(), quorum: {} })).toBe(false);
    expect(isPlainEvent({ ...ev(), extra: 1 })).toBe(false);
    const r = parseAgentUpdate(upd([{ ...ev(), at: "yesterday" }], []));
    expect(r).toEqual({ ok: false, error: "events.0.at: not an ISO time" });
  });
});
