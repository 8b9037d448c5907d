import { describe, expect, it } from "vitest";
import { alertAckSchema, checkBody, loginSchema, releaseRequestSchema } from "../../lib/contract/requests";

const ok = { expectedOwner: "worker-7", reason: "worker died", confirm: "lock:x" };

describe("release request body", () => {
  it("accepts every documented field with its type, and passes the fingerprint through", () => {
    const body = {
      ...ok,
      expectedSince: "2026-01-01T00:00:00.000Z",
      expectedFingerprint: "sha1:0123456789abcdef0123456789abcdef01234567",
      dryRun: true,
      purgeWaiter: "1f7c1d7e-0000-4000-8000-000000000002:31",
    };
    expect(checkBody(releaseRequestSchema, body)).toEqual({ ok: true, value: body });
    expect(checkBody(releaseRequestSchema, ok)).toEqual({ ok: true, value: ok });
  });

  // [what, body, the field the error must name]
  const bad: Array<[string, unknown, string | null]> = [
    ["dryRun as the string 'true' (it once did a real release)", { ...ok, dryRun: "true" }, "dryRun"],
    ["dryRun as 1", { ...ok, dryRun: 1 }, "dryRun"],
    ["a misspelt dryRun, which would otherwise be ignored", { ...ok, dryrun: true }, "dryrun"],
    ["no expectedOwner", { reason: "x y z" }, "expectedOwner"],
    ["an empty expectedOwner", { ...ok, expectedOwner: "" }, "expectedOwner"],
    ["expectedOwner as a number", { ...ok, expectedOwner: 7 }, "expectedOwner"],
    ["expectedOwner null (a lock with no known owner)", { ...ok, expectedOwner: null }, "expectedOwner"],
    ["no reason", { expectedOwner: "a" }, "reason"],
    ["a blank reason", { ...ok, reason: "   " }, "reason"],
    ["a reason too long", { ...ok, reason: "x".repeat(1001) }, "reason"],
    ["confirm as an array", { ...ok, confirm: ["lock:x"] }, "confirm"],
    ["expectedSince that is not a time", { ...ok, expectedSince: "yesterday" }, "expectedSince"],
    ["expectedSince as a number", { ...ok, expectedSince: 1_700_000_000_000 }, "expectedSince"],
    ["a fingerprint over 80 characters", { ...ok, expectedFingerprint: "f".repeat(81) }, "expectedFingerprint"],
    ["purgeWaiter as an object", { ...ok, purgeWaiter: { owner: "w" } }, "purgeWaiter"],
    ["no body", null, null],
    ["a JSON string", "release it", null],
    ["a JSON array", [ok], null],
  ];
  for (const [what, body, field] of bad) {
    it(`refuses ${what}, naming the field`, () => {
      const r = checkBody(releaseRequestSchema, body);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.field).toBe(field);
      if (field) expect(r.error.startsWith(`${field}: `)).toBe(true);
      else expect(r.error).toBe("send a JSON object");
    });
  }

  it("says what is wrong in words an operator can act on", () => {
    const r = checkBody(releaseRequestSchema, { ...ok, dryRun: "true" });
    expect(r).toMatchObject({ ok: false, error: "dryRun: must be true or false (a JSON boolean, not a string)" });
  });
});

describe("alert acknowledgement and sign-in bodies", () => {
  it("accepts an empty acknowledgement or one with a note, and nothing else", () => {
    expect(checkBody(alertAckSchema, {})).toEqual({ ok: true, value: {} });
    expect(checkBody(alertAckSchema, { note: "on it" })).toEqual({ ok: true, value: { note: "on it" } });
    expect(checkBody(alertAckSchema, { note: 5 })).toMatchObject({ ok: false, field: "note" });
    expect(checkBody(alertAckSchema, { by: "someone else" })).toMatchObject({ ok: false, field: "by" });
    expect(checkBody(alertAckSchema, "ack")).toMatchObject({ ok: false, field: null });
  });

  it("checks the sign-in body's types and sizes", () => {
    expect(checkBody(loginSchema, { name: "op", password: "pw" }).ok).toBe(true);
    expect(checkBody(loginSchema, { name: "op", password: 12345 })).toMatchObject({ ok: false, field: "password" });
    expect(checkBody(loginSchema, { name: "", password: "pw" })).toMatchObject({ ok: false, field: "name" });
    expect(checkBody(loginSchema, { name: "op", password: "x".repeat(1025) })).toMatchObject({
      ok: false,
      field: "password",
    });
  });
});
