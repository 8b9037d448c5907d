import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { AGENT_HEAP_GROWING_PERCENT } from "../../agent/node-flags";
import { HEAP_GROWING_PERCENT, heapGrowthFlag } from "../../lib/runtime/heap-growth";

describe("heap growth", () => {
  it("is limited unless the process was started with its own limit", () => {
    expect(heapGrowthFlag([])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    expect(heapGrowthFlag(["--import", "x.mjs"])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    expect(heapGrowthFlag(["--heap-growing-percent=50"])).toBeNull();
    expect(heapGrowthFlag(["--heap_growing_percent=10"])).toBeNull();
    expect(heapGrowthFlag([], AGENT_HEAP_GROWING_PERCENT)).toBe(`--heap-growing-percent=${AGENT_HEAP_GROWING_PERCENT}`);
    expect(heapGrowthFlag(["--heap-growing-percent=20"], AGENT_HEAP_GROWING_PERCENT)).toBeNull();
  });

  it("names a flag this node accepts (V8 ignores an unknown flag set at run time without a word)", () => {
    const flag = heapGrowthFlag([])!;
    expect(spawnSync(process.execPath, [flag, "-e", "0"]).status).toBe(0);
    expect(spawnSync(process.execPath, [`${flag.replace("percent", "percentage")}`, "-e", "0"]).status).not.toBe(0);
  });
});
