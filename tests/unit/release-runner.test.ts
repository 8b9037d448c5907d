import { describe, expect, it } from "vitest";
import { fingerprintOf } from "../../agent/release/fingerprint";
import { guardFingerprint, runRelease, type ReleaseAdapter } from "../../agent/release/release-runner";
import type { ReleaseCommand, ReleaseNodeResult } from "../../lib/contract/release";

const FP_A = fingerprintOf("token-a");
const FP_B = fingerprintOf("token-b");

const cmd = (over: Partial<ReleaseCommand> = {}): ReleaseCommand => ({
  requestId: "r",
  lockId: "L",
  expectedOwner: "token-a",
  expectedFingerprint: FP_A,
  dryRun: false,
  actor: "op",
  reason: "stuck",
  ...over,
});

/** A fake backend: one node holding `value`, with a log of the steps the runner took. */
function fakeAdapter(value: { current: string | null }, opts: { readFails?: boolean; writeFails?: boolean } = {}) {
  const steps: string[] = [];
  const adapter: ReleaseAdapter<string | null, { value: string }> = {
    where: "node-1",
    async read() {
      steps.push("read");
      if (opts.readFails) throw new Error("connection reset");
      return value.current;
    },
    fingerprint: (r) => (r === null ? null : fingerprintOf(r)),
    decide: (r, c) => {
      steps.push("decide");
      if (r === null) return { kind: "stop", outcome: "nothing-to-do", message: "gone" };
      if (r !== c.expectedOwner) return { kind: "stop", outcome: "refused-owner-changed", message: `now ${r}` };
      return { kind: "go", plan: { value: r }, steps: [`DEL if ${r}`] };
    },
    dryRun: () => ({ message: "nothing deleted (dry run)", perNode: [{ node: "node-1", outcome: "dry-run" }] }),
    async write(_r, plan, c) {
      steps.push("write");
      if (opts.writeFails) throw new Error("timeout");
      // The conditional delete: compares the exact holding on the "server".
      if (value.current !== null && fingerprintOf(value.current) === c.expectedFingerprint) {
        value.current = null;
        return [{ node: "node-1", outcome: "released" }];
      }
      return [{ node: "node-1", outcome: "refused-owner-changed", detail: `not ${plan.value}` }];
    },
    summarise: (perNode: readonly ReleaseNodeResult[]) => ({
      outcome: perNode[0]!.outcome,
      message: perNode[0]!.outcome === "released" ? "released by op" : "nothing deleted",
    }),
    async settle(perNode) {
      steps.push("settle");
      if (perNode[0]?.outcome !== "released") return null;
      return { events: [], upserts: [], removed: ["L"] };
    },
  };
  return { adapter, steps };
}

describe("guardFingerprint", () => {
  it("needs the exact holding for a real release, compares it, and lets a dry run go without one", () => {
    expect(guardFingerprint(cmd(), FP_A)).toBeNull();
    expect(guardFingerprint(cmd(), FP_B)).toMatchObject({ outcome: "refused-owner-changed" });
    expect(guardFingerprint(cmd({ expectedFingerprint: undefined }), FP_A)).toMatchObject({ outcome: "refused" });
    expect(guardFingerprint(cmd({ expectedFingerprint: undefined, dryRun: true }), FP_A)).toBeNull();
    expect(guardFingerprint(cmd(), null)).toMatchObject({ outcome: "refused" });
  });
});

describe("runRelease", () => {
  it("read -> decide -> write -> settle, and publishes the settled change", async () => {
    const value = { current: "token-a" as string | null };
    const { adapter, steps } = fakeAdapter(value);
    const { result, output } = await runRelease(adapter, cmd());
    expect(result).toMatchObject({ outcome: "released", plan: ["DEL if token-a"] });
    expect(steps).toEqual(["read", "decide", "write", "settle"]);
    expect(output.removed).toEqual(["L"]);
    expect(value.current).toBeNull();
  });

  it("a look-alike holding (same owner text, other fingerprint) is refused before any write", async () => {
    const value = { current: "token-a" as string | null };
    const { adapter, steps } = fakeAdapter(value);
    const { result } = await runRelease(adapter, cmd({ expectedFingerprint: FP_B }));
    expect(result.outcome).toBe("refused-owner-changed");
    expect(steps).not.toContain("write");
    expect(value.current).toBe("token-a");
  });

  it("a dry run writes nothing", async () => {
    const value = { current: "token-a" as string | null };
    const { adapter, steps } = fakeAdapter(value);
    const { result } = await runRelease(adapter, cmd({ dryRun: true }));
    expect(result).toMatchObject({ outcome: "dry-run", perNode: [{ node: "node-1", outcome: "dry-run" }] });
    expect(steps).toEqual(["read", "decide"]);
  });

  it("a failed read or write is an error that says whether anything could have been deleted", async () => {
    const read = await runRelease(fakeAdapter({ current: "token-a" }, { readFails: true }).adapter, cmd());
    expect(read.result).toMatchObject({ outcome: "error", message: expect.stringMatching(/nothing deleted/) });
    const write = await runRelease(fakeAdapter({ current: "token-a" }, { writeFails: true }).adapter, cmd());
    expect(write.result).toMatchObject({
      outcome: "error",
      message: expect.stringMatching(/removed only the holding you saw/),
    });
  });

  it("stops with the adapter's outcome when the fresh read decides so", async () => {
    const { result } = await runRelease(fakeAdapter({ current: null }).adapter, cmd());
    expect(result).toMatchObject({ outcome: "nothing-to-do", perNode: [{ node: "node-1", outcome: "nothing-to-do" }] });
  });
});
