import { describe, expect, it } from "vitest";
import {
  fourLetterRefusal,
  invertWchc,
  mergeWatchTables,
  parseCons,
  parseMntrWatchCount,
  parseWchc,
  parseWchs,
  stickyLastOps,
  parseWchp,
  toClientWatchTable,
} from "../../agent/sources/zookeeper/four-letter-words";

// Real answers of ZooKeeper 3.8.0 (Debian package) with three contenders on /ParentLock and a fourth session.
const WCHC =
  "0x100000c19540002\n\t/ParentLock/Lock0000000001\n0x100000c19540003\n\t/ParentLock/Lock0000000000\n0x100000c19540001\n\t/ParentLock/Lock0000000000\n\n";
const WCHP =
  "/ParentLock/Lock0000000000\n\t0x100000c19540003\n\t0x100000c19540001\n/ParentLock/Lock0000000001\n\t0x100000c19540002\n\n";
const CONS =
  " /127.0.0.1:56390[1](queued=0,recved=4,sent=4,sid=0x100000c19540000,lop=GETD,est=1795986464607,to=10000,lcxid=0x2,lzxid=0x8,lresp=800283,llat=0,minlat=0,avglat=3,maxlat=7)\n" +
  " /127.0.0.1:56408[1](queued=0,recved=3,sent=3,sid=0x100000c19540002,lop=EXIS,est=1795986464623,to=10000,lcxid=0x1,lzxid=0x8,lresp=800279,llat=1,minlat=0,avglat=0,maxlat=1)\n" +
  " /127.0.0.1:56434[0](queued=0,recved=1,sent=0)\n\n";
const REFUSED = (cmd: string) => `${cmd} is not executed because it is not in the whitelist.\n`;

describe("parseWchc", () => {
  const cases: Array<{
    name: string;
    text: string;
    truncated?: boolean;
    want: Record<string, string[]> | string;
    skipped?: number;
  }> = [
    {
      name: "real sample",
      text: WCHC,
      want: {
        "0x100000c19540002": ["/ParentLock/Lock0000000001"],
        "0x100000c19540003": ["/ParentLock/Lock0000000000"],
        "0x100000c19540001": ["/ParentLock/Lock0000000000"],
      },
    },
    { name: "no watches at all", text: "\n", want: {} },
    { name: "session with several paths", text: "0x1\n\t/a\n\t/b/c\n\n", want: { "0x1": ["/a", "/b/c"] } },
    { name: "paths with spaces and unicode", text: "0x1\n\t/a b/ü\u202e\n", want: { "0x1": ["/a b/ü\u202e"] } },
    {
      name: "truncated mid-path: the partial line is dropped",
      text: "0x1\n\t/a\n\t/b/Lock00",
      truncated: true,
      want: { "0x1": ["/a"] },
    },
    { name: "no trailing newline: last line may be cut", text: "0x1\n\t/a\n\t/b", want: { "0x1": ["/a"] } },
    { name: "path before any session is skipped", text: "\t/orphan\n0x2\n\t/a\n", want: { "0x2": ["/a"] }, skipped: 1 },
    {
      name: "garbage session line resets the block",
      text: "0x1\n\t/a\nnot-a-session\n\t/b\n",
      want: { "0x1": ["/a"] },
      skipped: 2,
    },
    { name: "refused", text: REFUSED("wchc"), want: "not-whitelisted" },
    { name: "not serving", text: "This ZooKeeper instance is not currently serving requests\n", want: "not-serving" },
    { name: "empty answer (connection closed)", text: "", want: "empty" },
    { name: "binary junk", text: "\u0000\u0001\u00ff\n\u0002\n", want: "malformed" },
    { name: "wchp output given to wchc", text: WCHP, want: "malformed" },
  ];
  it.each(cases)("$name", ({ text, truncated, want, skipped }) => {
    const r = parseWchc(text, truncated);
    if (typeof want === "string") {
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toBe(want);
      return;
    }
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Object.fromEntries(r.value)).toEqual(want);
    if (skipped !== undefined) expect(r.skipped).toBe(skipped);
  });
});

describe("parseWchp", () => {
  const cases: Array<{ name: string; text: string; truncated?: boolean; want: Record<string, string[]> | string }> = [
    {
      name: "real sample",
      text: WCHP,
      want: {
        "/ParentLock/Lock0000000000": ["0x100000c19540003", "0x100000c19540001"],
        "/ParentLock/Lock0000000001": ["0x100000c19540002"],
      },
    },
    { name: "no watches", text: "\n", want: {} },
    {
      name: "exists watch on a node that does not exist is listed like any other",
      text: "/gone/Lock0000000009\n\t0xabc\n\n",
      want: { "/gone/Lock0000000009": ["0xabc"] },
    },
    { name: "truncated in a session id", text: "/a\n\t0x1\n\t0x2f", truncated: true, want: { "/a": ["0x1"] } },
    { name: "over-long session id is skipped", text: "/a\n\t0x11111111111111111\n\t0x1\n", want: { "/a": ["0x1"] } },
    { name: "refused", text: REFUSED("wchp"), want: "not-whitelisted" },
    { name: "junk", text: "hello\nworld\n", want: "malformed" },
  ];
  it.each(cases)("$name", ({ text, truncated, want }) => {
    const r = parseWchp(text, truncated);
    if (typeof want === "string") {
      expect(r.ok ? "ok" : r.reason).toBe(want);
      return;
    }
    expect(r.ok && Object.fromEntries(r.value)).toEqual(want);
  });

  it("wchc inverted equals wchp", () => {
    const c = parseWchc(WCHC);
    const p = parseWchp(WCHP);
    if (!c.ok || !p.ok) throw new Error("samples must parse");
    const inverted = invertWchc(c.value);
    for (const [path, sessions] of p.value) expect(new Set(inverted.get(path))).toEqual(new Set(sessions));
  });
});

describe("parseCons", () => {
  it("parses the real sample, including the 4lw connection without a session", () => {
    const r = parseCons(CONS);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value).toHaveLength(3);
    expect(r.value[0]).toEqual({
      address: "127.0.0.1",
      port: 56390,
      session: "0x100000c19540000",
      lastOp: "GETD",
      timeoutMs: 10000,
      establishedMs: 1795986464607,
      queued: 0,
      received: 4,
      sent: 4,
    });
    expect(r.value[2]).toEqual({ address: "127.0.0.1", port: 56434, queued: 0, received: 1, sent: 0 });
  });

  it.each([
    {
      name: "IPv6 client",
      text: " /0:0:0:0:0:0:0:1:41234[1](queued=0,sid=0x5,lop=PING)\n",
      want: { address: "0:0:0:0:0:0:0:1", port: 41234, session: "0x5", queued: 0, lastOp: "PING" },
    },
    {
      name: "bad sid is ignored, line kept",
      text: " /127.0.0.1:1[1](sid=0xZZ,to=abc)\n",
      want: { address: "127.0.0.1", port: 1 },
    },
    {
      name: "fields with stray commas",
      text: " /127.0.0.1:2[1](,sid=0x7,,=,to=5)\n",
      want: { address: "127.0.0.1", port: 2, session: "0x7", timeoutMs: 5 },
    },
  ])("$name", ({ text, want }) => {
    const r = parseCons(text);
    expect(r.ok && r.value[0]).toEqual(want);
  });

  it.each([
    ["refused", REFUSED("cons"), "not-whitelisted"],
    ["empty", "", "empty"],
    ["junk", "127.0.0.1 connected\n", "malformed"],
  ])("%s -> %s", (_n, text, reason) => {
    const r = parseCons(text);
    expect(r.ok ? "ok" : r.reason).toBe(reason);
  });

  it("a truncated last line is dropped, not half-parsed", () => {
    const r = parseCons(CONS.slice(0, 200), true);
    expect(r.ok && r.value).toHaveLength(1);
  });
});

describe("fourLetterRefusal", () => {
  it("recognises the whitelist refusal for any command", () => {
    expect(fourLetterRefusal("wchp", REFUSED("wchp"))?.reason).toBe("not-whitelisted");
    expect(fourLetterRefusal("cons", WCHP)).toBeNull();
  });
});

// ZooKeeper 3.8.0 with two sessions watching /herd's children and one exists watch (wchs counts data watches only).
const WCHS = "1 connections watching 1 paths\nTotal watches:1\n";
const MNTR =
  "zk_version\t3.8.0-x, built on 2024-12-29 17:54 UTC\nzk_server_state\tstandalone\nzk_watch_count\t3\nzk_watch_bytes\t0\n";

describe("wchs and mntr: the child watches the listings hide", () => {
  it("parses wchs's total and mntr's zk_watch_count", () => {
    expect(parseWchs(WCHS)).toEqual({ ok: true, value: { connections: 1, paths: 1, total: 1 }, skipped: 0 });
    expect(parseMntrWatchCount(MNTR)).toEqual({ ok: true, value: 3, skipped: 0 });
  });

  it("refused, empty and malformed answers are not numbers", () => {
    expect(parseWchs(REFUSED("wchs"))).toMatchObject({ ok: false, reason: "not-whitelisted" });
    expect(parseWchs("")).toMatchObject({ ok: false, reason: "malformed" });
    expect(parseWchs("Total watches:abc\n")).toMatchObject({ ok: false, reason: "malformed" });
    expect(parseMntrWatchCount(REFUSED("mntr"))).toMatchObject({ ok: false, reason: "not-whitelisted" });
    expect(parseMntrWatchCount("zk_watch_count\t-1\n")).toMatchObject({ ok: false, reason: "malformed" });
  });

  it("merged: the unlisted (child) watches summed over servers, and each session's last request", () => {
    const ok = <T>(value: T) => ({ ok: true as const, value, skipped: 0 });
    const cons = parseCons(
      " /127.0.0.1:33924[1](queued=0,recved=3,sent=3,sid=0x100000d3f0a0001,lop=GETC,est=1796117402902,to=6000)\n\n",
    );
    const t = mergeWatchTables([
      { server: "a:1", wchp: ok(new Map()), cons, wchs: parseWchs(WCHS), mntr: parseMntrWatchCount(MNTR) },
      { server: "b:1", wchp: ok(new Map()), cons: ok([]), wchs: ok({ total: 4 }), mntr: ok(5) },
    ]);
    expect(t.unlistedWatches).toBe(3);
    expect(t.lastOps.get("0x100000d3f0a0001")).toBe("GETC");
    expect(toClientWatchTable(t, "").unlistedWatches).toBe(3);
    const unknown = mergeWatchTables([{ server: "a:1", wchp: ok(new Map()), cons: ok([]), wchs: null, mntr: ok(5) }]);
    expect(unknown.unlistedWatches).toBeNull();
  });
});

describe("stickyLastOps", () => {
  it("a ping does not hide the request seen before it; sessions gone are forgotten", () => {
    const before = new Map([
      ["0x1", "GETC"],
      ["0x2", "EXIS"],
      ["0x3", "GETC"],
    ]);
    const now = new Map([
      ["0x1", "PING"],
      ["0x2", "GETD"],
      ["0x4", "PING"],
    ]);
    expect([...stickyLastOps(before, now)]).toEqual([
      ["0x1", "GETC"],
      ["0x2", "GETD"],
      ["0x4", "PING"],
    ]);
  });
});

describe("mergeWatchTables and toClientWatchTable", () => {
  const ok = <T>(value: T) => ({ ok: true as const, value, skipped: 0 });
  it("adds up the servers of an ensemble; one refusal makes it incomplete", () => {
    const both = mergeWatchTables([
      {
        server: "a:1",
        wchp: ok(new Map([["/l/Lock0000000000", ["0x1"]]])),
        cons: ok([{ address: "10.0.0.1", port: 5, session: "0x1" }]),
      },
      {
        server: "b:1",
        wchp: ok(new Map([["/l/Lock0000000000", ["0x2"]]])),
        cons: ok([{ address: "::1", port: 6, session: "0x2" }]),
      },
    ]);
    expect(both.complete).toBe(true);
    expect([...both.byPath.get("/l/Lock0000000000")!]).toEqual(["0x1", "0x2"]);
    expect(both.hosts.get("0x2")).toBe("[::1]:6");

    const refused = mergeWatchTables([
      { server: "a:1", wchp: ok(new Map()), cons: ok([]) },
      {
        server: "b:1",
        wchp: { ok: false, reason: "not-whitelisted", message: "wchp is not in the server's 4lw.commands.whitelist" },
        cons: null,
      },
    ]);
    expect(refused.complete).toBe(false);
    expect(refused.sessionsComplete).toBe(false);
    expect(refused.problems[0]).toContain("b:1");
  });

  it("an empty ensemble answer is never complete", () => {
    expect(mergeWatchTables([]).complete).toBe(false);
  });

  it("strips the chroot and drops watches outside it", () => {
    const t = mergeWatchTables([
      {
        server: "a:1",
        wchp: ok(
          new Map([
            ["/app/locks/Lock0000000000", ["0x1"]],
            ["/other/x", ["0x2"]],
            ["/app", ["0x3"]],
          ]),
        ),
        cons: ok([]),
      },
    ]);
    const client = toClientWatchTable(t, "/app");
    expect([...client.byPath.keys()].sort()).toEqual(["/", "/locks/Lock0000000000"]);
    expect([...client.bySession.get("0x1")!]).toEqual(["/locks/Lock0000000000"]);
    expect(toClientWatchTable(t, "").byPath.size).toBe(3);
  });
});
