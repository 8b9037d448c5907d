import { describe, expect, it } from "vitest";
import { admitAgent, checkReleaseAnswer } from "../../lib/server/agent-gateway";

describe("one live connection per agent id", () => {
  it("admits the first connection of an id, and any after the holder is gone", () => {
    expect(admitAgent("dc1", undefined, "i1")).toEqual({ admit: true, replaces: false });
    expect(admitAgent("dc1", { instanceId: "i1", connected: false }, "i2")).toEqual({ admit: true, replaces: false });
  });

  it("lets the same agent process replace its own connection the dashboard has not yet seen close", () => {
    expect(admitAgent("dc1", { instanceId: "i1", connected: true }, "i1")).toEqual({ admit: true, replaces: true });
  });

  it("refuses a second process with the same id while the first is connected, saying what to do", () => {
    const a = admitAgent("dc1", { instanceId: "i1", connected: true }, "i2");
    expect(a.admit).toBe(false);
    if (a.admit) return;
    expect(a.error).toContain("agent id dc1 is already connected");
    expect(a.error).toContain("AGENT_ID");
  });
});

describe("an agent's release answer", () => {
  const good = {
    outcome: "released",
    message: "deleted",
    plan: ["DEL k"],
    perNode: [{ node: "n1", outcome: "released" }],
  };

  it("passes a well-formed ReleaseResult through unchanged", () => {
    expect(checkReleaseAnswer("dc1", good)).toEqual(good);
  });

  const bad: Array<[string, unknown]> = [
    ["nothing", undefined],
    ["a bare outcome", { outcome: "released" }],
    ["an unknown outcome", { ...good, outcome: "deleted" }],
    ["a message that is not text", { ...good, message: 42 }],
    ["a per-node outcome that is not an outcome", { ...good, perNode: [{ node: "n1", outcome: "yes" }] }],
    ["a string", "released"],
  ];
  for (const [what, answer] of bad) {
    it(`turns ${what} into an error, never "released"`, () => {
      const r = checkReleaseAnswer("dc1", answer);
      expect(r.outcome).toBe("error");
      expect(r.message).toContain("agent dc1 sent an invalid release answer");
      expect(r.perNode).toEqual([]);
    });
  }
});
