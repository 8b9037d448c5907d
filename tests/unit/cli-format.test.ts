import { describe, expect, it } from "vitest";
import {
  cell,
  formatDuration,
  lockDetail,
  locksTable,
  matchesFilter,
  releaseText,
  safeText,
  table,
  ttlText,
} from "../../cli/format";
import { renderWatch, WatchModel } from "../../cli/watch";
import type { Lock } from "../../lib/contract/lock";

const NOW = Date.parse("2026-12-01T10:00:00Z");

function lock(over: Partial<Lock>): Lock {
  return {
    id: "id-a",
    backend: "redis",
    source: "redis://127.0.0.1:6379/0",
    resource: "lock:orders",
    owner: "w-1",
    library: "generic",
    rule: "generic-string-token",
    ttlMs: 12_000,
    holder: null,
    waiters: [],
    since: "2026-12-01T09:59:30Z",
    observedAt: "2026-12-01T10:00:00Z",
    kind: "string",
    valuePreview: "w-1",
    hazards: [],
    agentId: "a1",
    ...over,
  };
}

describe("lockscope terminal output", () => {
  it("never lets control characters or bidi overrides reach the terminal", () => {
    expect(safeText("lock:\x1b[31mred\nx\u202e")).toBe("lock:\\x1b[31mred\\x0ax\\u{202e}");
    expect(cell("abcdefghij", 5)).toBe("abcd…");
    expect(cell(null, 5)).toBe("—");
  });

  it("aligns columns to their content and cuts long values", () => {
    expect(
      table(
        ["A", "BB"],
        [
          ["x", "1"],
          ["long value", "22"],
        ],
        [6, 10],
      ),
    ).toBe("A       BB\nx       1\nlong …  22");
  });

  it("formats durations and counts TTLs down from the answer's time", () => {
    expect(formatDuration(1234)).toBe("1.2 s");
    expect(formatDuration(65_000)).toBe("1 m 05 s");
    expect(formatDuration(3 * 3_600_000 + 10 * 60_000)).toBe("3 h 10 m");
    expect(formatDuration(50 * 3_600_000)).toBe("2 d 2 h");
    expect(ttlText(null, NOW, NOW)).toBe("never");
    expect(ttlText(12_000, NOW - 2000, NOW)).toBe("10 s");
    expect(ttlText(1000, NOW - 5000, NOW)).toBe("0.0 s");
  });

  it("lists the most hazardous locks first", () => {
    const out = locksTable(
      [
        lock({}),
        lock({
          id: "id-b",
          resource: "lock:legacy",
          ttlMs: null,
          hazards: [{ code: "no-ttl", severity: "critical", message: "never expires" }],
        }),
      ],
      NOW,
      NOW,
    ).split("\n");
    expect(out[0]).toMatch(/^RESOURCE\s+BACKEND\s+OWNER\s+TTL\s+HELD\s+WAITERS\s+LIBRARY\s+HAZARDS\s+ID$/);
    expect(out[1]).toMatch(/^lock:legacy\s+redis\s+w-1\s+never\s+30 s\s+0\s+generic\s+no-ttl\s+id-b$/);
    expect(out[2]).toMatch(/^lock:orders\s+redis\s+w-1\s+12 s\s+30 s\s+0\s+generic\s+-\s+id-a$/);
    expect(locksTable([], NOW, NOW)).toBe("no locks held");
  });

  it("shows a lock's holder, waiters, hazards and events, or that it is not held", () => {
    const held = lockDetail(
      {
        generatedAt: "2026-12-01T10:00:00Z",
        lock: lock({
          waiters: [{ owner: "w-2", since: "2026-12-01T09:59:50Z" }],
          hazards: [{ code: "held-too-long", severity: "warning", message: "held 30 s" }],
        }),
        events: [],
      },
      NOW,
    );
    expect(held).toContain("status        held");
    expect(held).toContain("waiters (1)\n  1. w-2 since 2026-12-01T09:59:50Z");
    expect(held).toContain("hazards (1)\n  warning  held-too-long: held 30 s");
    const gone = lockDetail(
      {
        generatedAt: "2026-12-01T10:00:00Z",
        lock: null,
        events: [
          {
            id: "e1",
            agentId: "a1",
            type: "released",
            lockId: "id-a",
            backend: "redis",
            source: "s",
            resource: "lock:orders",
            owner: "w-1",
            at: "2026-12-01T09:59:59Z",
          },
        ],
      },
      NOW,
    );
    expect(gone).toContain("status        not held (released at 2026-12-01T09:59:59Z)");
    expect(gone).toMatch(/recent events \(1\)\nAT\s+TYPE/);
  });

  it("states a release's outcome, plan and per-node results", () => {
    expect(
      releaseText({
        outcome: "released",
        message: "released by op",
        plan: ["DEL k on a", "DEL k on b"],
        perNode: [
          { node: "a", outcome: "released" },
          { node: "b", outcome: "error", detail: "timeout" },
        ],
      }),
    ).toBe(
      "released: released by op\nplan:\n  DEL k on a\n  DEL k on b\nper node:\n  a: released\n  b: error (timeout)",
    );
  });

  it("filters by backend, hazard and a text query", () => {
    const l = lock({ hazards: [{ code: "no-ttl", severity: "critical", message: "" }] });
    expect(matchesFilter(l, {})).toBe(true);
    expect(matchesFilter(l, { backend: "zookeeper" })).toBe(false);
    expect(matchesFilter(l, { hazard: "no-ttl", query: "ORDERS" })).toBe(true);
    expect(matchesFilter(l, { hazard: "split" })).toBe(false);
    expect(matchesFilter(l, { query: "payments" })).toBe(false);
  });

  it("keeps the watch model in step with the state and deltas and counts TTLs down", () => {
    const m = new WatchModel();
    m.replace([lock({}), lock({ id: "id-b", resource: "lock:b" })], NOW);
    m.apply([lock({ id: "id-c", resource: "lock:c", ttlMs: null })], ["id-b"], NOW + 1000);
    const view = m.view({}, NOW + 3000);
    expect(view.map((l) => [l.id, l.ttlMs])).toEqual([
      ["id-a", 9000],
      ["id-c", null],
    ]);
    const screen = renderWatch(view, { url: "http://127.0.0.1:3000", connected: false, nowMs: NOW }, true);
    expect(screen.startsWith("\x1b[H\x1b[2Jlockscope watch http://127.0.0.1:3000 · 2 locks · disconnected")).toBe(true);
    expect(renderWatch([], { url: "u", connected: true, nowMs: NOW }, false)).toBe(
      "\nlockscope watch u · 0 locks · live · 10:00:00 UTC\nno locks held\n",
    );
  });
});
