import { afterEach, describe, expect, it } from "vitest";
import type { Lock } from "../../lib/contract/lock";
import type { AgentUpdate, ViewUpdate } from "../../lib/contract/socket";
import { LiveState } from "../../lib/server/live-state";
import { parseLockQuery, type LockQuery } from "../../lib/server/lock-query";
import { LockViews, MAX_VIEWS_PER_CLIENT } from "../../lib/server/lock-views";
import { testLock } from "../harness/lock-fixture";

const lock = testLock;

const update = (upserts: Lock[], removed: string[] = []): AgentUpdate => ({
  agentId: "a1",
  at: "",
  sources: [],
  upserts,
  removed,
  events: [],
});

function q(qs: string): LockQuery {
  const r = parseLockQuery(new URLSearchParams(qs));
  if (!r.ok) throw new Error(r.error);
  return r.query;
}

let views: LockViews | null = null;
afterEach(() => views?.close());

function setup(initial: Lock[]) {
  const live = new LiveState(() => 1000);
  live.applyUpdate(update(initial));
  views = new LockViews(live, () => 1000);
  const sent: ViewUpdate[] = [];
  const apply = (u: AgentUpdate) => {
    views!.onChange(live.applyUpdate(u));
    views!.flush();
  };
  return { live, views, sent, send: (u: ViewUpdate) => (sent.push(u), true), apply };
}

describe("LockViews", () => {
  it("sends the window on subscribe, then only what changed in it, plus the counts", () => {
    const t = setup(Array.from({ length: 10 }, (_, i) => lock(`L${i}`)));
    t.views.subscribe("c1", "table", q("offset=0&limit=3"), t.send);
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]).toMatchObject({ viewId: "table", seq: 1, full: true, total: 10, offset: 0, removed: [] });
    expect(t.sent[0]!.locks.map((l) => l.id)).toEqual(["L0", "L1", "L2"]);

    // A change outside the window that leaves the total as it was: nothing to send.
    t.apply(update([lock("L9", { owner: "new" })]));
    expect(t.sent).toHaveLength(1);
    // A new lock outside the window: the total only, no rows.
    t.apply(update([lock("L95")]));
    expect(t.sent[1]).toMatchObject({ seq: 2, full: false, total: 11, locks: [], removed: [] });
    expect(t.sent[1]!.order).toBeUndefined();

    // A change inside the window: that row only.
    t.apply(update([lock("L1", { owner: "changed" })]));
    expect(t.sent[2]!.locks.map((l) => [l.id, l.owner])).toEqual([["L1", "changed"]]);

    // A new lock enters the window at the top: one row in, one out, and the new order.
    t.apply(update([lock("L00")]));
    expect(t.sent[3]).toMatchObject({ locks: [{ id: "L00" }], removed: ["L2"], order: ["L0", "L00", "L1"] });
  });

  it("does not wake a view for a change its filter excludes", () => {
    const t = setup([lock("a", { backend: "redlock" }), lock("b")]);
    t.views.subscribe("c1", "redlock", q("backend=redlock"), t.send);
    t.apply(update([lock("c"), lock("d")], ["b"]));
    expect(t.sent).toHaveLength(1);
    t.apply(update([], ["a"]));
    expect(t.sent[1]).toMatchObject({ total: 0, removed: ["a"], order: [] });
  });

  it("a congested client keeps its last state and gets the whole window once it drains", () => {
    const t = setup([lock("a"), lock("b")]);
    let open = true;
    t.views.subscribe("c1", "v", q(""), (u) => (open ? (t.sent.push(u), true) : false));
    open = false;
    t.apply(update([lock("c")]));
    expect(t.sent).toHaveLength(1);
    open = true;
    t.views.flush();
    expect(t.sent[1]).toMatchObject({ seq: 2, full: true, total: 3 });
    expect(t.sent[1]!.locks.map((l) => l.id)).toEqual(["a", "b", "c"]);
  });

  it("forgets a client's views when it goes, and bounds views per client", () => {
    const t = setup([lock("a")]);
    for (let i = 0; i < MAX_VIEWS_PER_CLIENT; i++) expect(t.views.subscribe("c1", `v${i}`, q(""), t.send)).toBeNull();
    expect(t.views.subscribe("c1", "one-more", q(""), t.send)).toBe(
      `at most ${MAX_VIEWS_PER_CLIENT} views per connection`,
    );
    // Replacing an existing view is always allowed, and its sequence keeps increasing.
    expect(t.views.subscribe("c1", "v0", q("q=a"), t.send)).toBeNull();
    expect(t.sent[t.sent.length - 1]).toMatchObject({ viewId: "v0", seq: 2, full: true });
    t.views.dropClient("c1");
    expect(t.views.viewCount).toBe(0);
  });
});
