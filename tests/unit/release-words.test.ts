import { describe, expect, it } from "vitest";
import { OUTCOME_LABEL, releaseBlocker } from "../../components/release/release-words";

describe("force-release controls", () => {
  it("a disabled button says why, most pressing reason first", () => {
    const ok = { busy: false, reason: "worker died", confirmed: true, ownerChanged: false };
    expect(releaseBlocker(ok)).toBeNull();
    expect(releaseBlocker({ ...ok, reason: " x " })).toMatch(/reason/);
    expect(releaseBlocker({ ...ok, confirmed: false })).toMatch(/Type the resource name/);
    expect(releaseBlocker({ ...ok, confirmed: false, ownerChanged: true })).toMatch(/holder changed/);
    expect(releaseBlocker({ ...ok, busy: true, ownerChanged: true })).toMatch(/Waiting/);
  });

  it("a lock that stopped being held while the panel was open cannot be released, and says so", () => {
    const ok = { busy: false, reason: "worker died", confirmed: true, ownerChanged: false };
    expect(releaseBlocker({ ...ok, notHeld: true })).toMatch(/not held right now/);
    expect(releaseBlocker({ ...ok, notHeld: false })).toBeNull();
  });

  it("labels every outcome in words, never the raw code twice", () => {
    for (const o of ["released", "dry-run", "nothing-to-do", "refused-owner-changed", "refused", "rejected", "error"])
      expect(OUTCOME_LABEL[o]).toMatch(/^[A-Z][a-z]/);
    expect(`${OUTCOME_LABEL["dry-run"]}: nothing deleted`).toBe("Dry run: nothing deleted");
  });
});
