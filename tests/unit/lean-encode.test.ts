import { describe, expect, it } from "vitest";
import RedisParser from "redis-parser";
import { encodeCommands } from "../../agent/sources/redis/lean-connection";

/** Every command back out of the bytes, as a server would read them: RESP2 arrays of bulk strings. */
function decode(wire: string | Buffer): Buffer[][] {
  const out: Buffer[][] = [];
  const parser = new RedisParser({
    returnBuffers: true,
    returnReply: (r) => out.push(r as Buffer[]),
    returnError: (e) => {
      throw e;
    },
    returnFatalError: (e) => {
      throw e;
    },
  });
  parser.execute(Buffer.isBuffer(wire) ? wire : Buffer.from(wire));
  return out;
}

describe("encodeCommands (the lean connection's RESP2)", () => {
  it("writes text-only commands as one string, byte for byte what redis-cli sends", () => {
    const wire = encodeCommands([
      ["PTTL", "lock:a"],
      ["GETRANGE", "lock:a", 0, 255],
    ]);
    expect(typeof wire).toBe("string");
    expect(wire).toBe(
      "*2\r\n$4\r\nPTTL\r\n$6\r\nlock:a\r\n*4\r\n$8\r\nGETRANGE\r\n$6\r\nlock:a\r\n$1\r\n0\r\n$3\r\n255\r\n",
    );
  });

  it("counts a multibyte string's bytes, not its characters", () => {
    const wire = encodeCommands([["PTTL", "lock:é"]]);
    expect(decode(wire)[0]![1]!.toString("utf8")).toBe("lock:é");
    expect(wire).toContain("$7\r\n");
  });

  it("copies binary and hostile keys in as they are: CRLF, RESP markers, invalid UTF-8, empty, 1 MB", () => {
    const hostile = [
      Buffer.from("lock:\r\n*1\r\n$4\r\nPING\r\n"),
      Buffer.from([0xff, 0xfe, 0x00, 0x0d, 0x0a, 0x80]),
      Buffer.alloc(0),
      Buffer.alloc(1024 * 1024, 0x41),
    ];
    const commands = hostile.flatMap((k) => [
      ["PTTL", k],
      ["HSCAN", k, "0", "COUNT", 20],
    ]);
    const wire = encodeCommands(commands);
    expect(Buffer.isBuffer(wire)).toBe(true);
    const back = decode(wire);
    expect(back).toHaveLength(commands.length);
    back.forEach((c, i) => {
      expect(c.map((b) => b.toString("latin1"))).toEqual(
        commands[i]!.map((a) => (Buffer.isBuffer(a) ? a.toString("latin1") : String(a))),
      );
    });
  });

  it("mixes text and binary commands in order", () => {
    const wire = encodeCommands([
      ["TYPE", "a"],
      ["TYPE", Buffer.from([0xc3])],
      ["EXISTS", "b", Buffer.from("c")],
    ]);
    expect(decode(wire).map((c) => c.map((b) => b.toString("latin1")).join(" "))).toEqual([
      "TYPE a",
      "TYPE \u00c3",
      "EXISTS b c",
    ]);
  });

  it("sends nothing for no commands", () => {
    expect(encodeCommands([])).toBe("");
  });
});
