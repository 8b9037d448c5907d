import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_NODE_FLAGS } from "../../agent/node-flags";

const root = path.resolve(import.meta.dirname, "..", "..");

describe("the agent's V8 flags", () => {
  it("are the ones `npm run agent` starts it with (package.json cannot import them)", () => {
    const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.agent).toBe(["node", ...AGENT_NODE_FLAGS, "dist/agent.mjs"].join(" "));
  });
});
