import { describe, expect, it } from "vitest";
import { chooseEncoding } from "../../lib/server/http-handler";

describe("chooseEncoding", () => {
  it.each([
    ["gzip, deflate, br", "br"],
    ["gzip, deflate", "gzip"],
    ["GZIP", "gzip"],
    ["br;q=0, gzip;q=0.5", "gzip"],
    ["br;q=0.1", "br"],
    ["*", "gzip"],
    ["identity", null],
    ["", null],
    [undefined, null],
    ["gzip;q=0", null],
  ])("%s -> %s", (header, coding) => {
    expect(chooseEncoding(header)).toBe(coding);
  });
});
