import { afterEach, describe, expect, it } from "vitest";
import { WATCH_ONLY_ACL, FORCE_RELEASE_ACL } from "../../agent/sources/redis/acl-rules";
import type { LeanConnection } from "../../agent/sources/redis/lean-connection";
import { startRedis, type RedisServer } from "../harness/redis";
import { startInProcessAgent, type InProcessAgent } from "../harness/in-process-agent";
import { waitFor } from "../harness/ports";

/** What lockscope costs the watched server, counted by the server itself, and how it runs with least privilege. */
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function server(): Promise<RedisServer> {
  const r = await startRedis();
  cleanup.push(() => r.stop());
  return r;
}

async function agent(url: string, opts: Parameters<typeof startInProcessAgent>[1]): Promise<InProcessAgent> {
  const a = await startInProcessAgent(url, opts);
  cleanup.push(() => a.stop());
  return a;
}

/** INFO commandstats as calls per command. Sample line: cmdstat_pttl:calls=3,usec=5,usec_per_call=1.67,... */
function commandCalls(info: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

function netInput(info: string): number {
  return Number(/^total_net_input_bytes:(\d+)/m.exec(info)![1]);
}

const READS = ["type", "pttl", "strlen", "getrange"];

describe("the cost of watching", () => {
  it("does not re-read an unchanged lock in track mode (INFO commandstats), while poll mode re-reads each one", async () => {
    const r = await server();
    const c = r.client();
    for (let i = 0; i < 50; i++) await c.set(`quiet:lock:${i}`, `token-${i}`, "PX", 600_000);
    const counts = async (mode: "track" | "poll") => {
      const a = await agent(r.url, { changeDetection: mode, sweepMs: 600_000 });
      await waitFor(`${mode}: 50 locks seen`, () => a.events.filter((e) => e.type === "acquired").length === 50);
      if (mode === "track") await waitFor("track live", () => a.loop.statuses()[0]!.changeDetection === "track");
      const pollsBefore = a.loop.polls;
      await c.config("RESETSTAT");
      await waitFor(`${mode}: five more polls`, () => a.loop.polls >= pollsBefore + 6, { timeoutMs: 5000 });
      const calls = commandCalls(await c.info("commandstats"));
      a.stop();
      return { reads: READS.reduce((n, cmd) => n + (calls.get(cmd) ?? 0), 0), scans: calls.get("scan") ?? 0 };
    };
    const tracked = await counts("track");
    const polled = await counts("poll");
    expect(tracked.reads).toBe(0);
    expect(tracked.scans).toBeGreaterThan(0); // discovery still runs
    expect(polled.reads).toBeGreaterThanOrEqual(5 * 50 * 4);
  });

  it("the sweep finds a change tracking missed, at about 2 commands per quiet swept lock (INFO commandstats)", async () => {
    const r = await server();
    const c = r.client();
    for (let i = 0; i < 50; i++) await c.set(`swept:lock:${i}`, `token-${i}`, "PX", 600_000);
    // Locks with companion keys (none of which exists): Redisson hashes (a fair-lock queue and deadline set each)
    // and `SETNX … 1` (a permit semaphore's lease set): swept with PTTL, the bounded read and one EXISTS.
    for (let i = 0; i < 20; i++) {
      await c.hset(`swept:rlock:${i}`, `3f2504e0-4f89-41d3-9a0c-0305e82c33${String(i).padStart(2, "0")}:1`, "1");
      await c.pexpire(`swept:rlock:${i}`, 600_000);
      await c.setnx(`swept:legacy-lock:${i}`, "1");
    }
    const a = await agent(r.url, { changeDetection: "track", sweepMs: 2000 });
    await waitFor("90 locks seen", () => a.events.filter((e) => e.type === "acquired").length === 90);
    await waitFor("track live", () => a.loop.statuses()[0]!.changeDetection === "track");
    // The server stops announcing the reader's keys, while the agent still believes it is tracked: what only the
    // sweep can then see.
    const target = a.sources.sources[0] as unknown as {
      client: import("ioredis").Redis;
      mode: { source: { port: { lean: { conn: LeanConnection } } } };
    };
    await target.client.call("CLIENT", "TRACKING", "OFF");
    // The bulk reads' lean connection (lean-connection.ts) tracks the keys it read too.
    const [off] = await target.mode.source.port.lean.conn.exec([["CLIENT", "TRACKING", "OFF"]]);
    expect(off?.[0]).toBeNull();
    await c.config("RESETSTAT");
    await c.set("swept:lock:7", "token-other", "PX", 600_000);
    await c.pexpire("swept:lock:8", 900_000);
    await waitFor("owner change found", () => a.types("swept:lock:7").join() === "acquired,owner-changed", {
      timeoutMs: 8000,
    });
    await waitFor("renewal found", () => a.types("swept:lock:8").join() === "acquired,renewed", { timeoutMs: 8000 });
    for (const k of ["swept:lock:7", "swept:lock:8"]) {
      expect(a.events.find((e) => e.resource === k && e.type !== "acquired")!.detail?.observedBy).toBe("poll");
    }
    // One more sweep period with nothing changing, then the server's count of what the sweep sent.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const calls = commandCalls(await c.info("commandstats"));
    const n = (cmd: string) => calls.get(cmd) ?? 0;
    // Every lock was swept at least once (a GETRANGE or HSCAN each), the two changed ones also read fully (TYPE,
    // STRLEN); a quiet lock costs PTTL + GETRANGE, one with companions PTTL + the bounded read + one EXISTS (the
    // full read of those was 6 to 8 commands: TYPE, PTTL, length, read, and TYPE + PTTL of each companion).
    expect(n("getrange")).toBeGreaterThanOrEqual(70);
    expect(n("hscan")).toBeGreaterThanOrEqual(20);
    expect(n("exists")).toBeGreaterThanOrEqual(40);
    expect(n("type")).toBeGreaterThanOrEqual(2);
    expect(n("type")).toBeLessThanOrEqual(6);
    expect(n("strlen") + n("hlen")).toBe(n("type"));
    const reads = ["pttl", "getrange", "hscan", "exists", "type", "strlen", "hlen"].reduce((t, cmd) => t + n(cmd), 0);
    const perSweptLock = reads / (n("getrange") + n("hscan") - n("strlen") - n("hlen"));
    expect(perSweptLock).toBeLessThan(2.6);
  });

  it("does not re-send a 1 MB key name on every poll or sweep, in either mode", async () => {
    const r = await server();
    const c = r.client();
    const huge = `big:lock:${"x".repeat(1024 * 1024)}`;
    await c.set(huge, "token-big", "PX", 600_000);
    for (const mode of ["track", "poll"] as const) {
      const a = await agent(r.url, { changeDetection: mode, sweepMs: 600_000 });
      await waitFor(`${mode}: the lock with the huge name`, () => a.events.some((e) => e.type === "acquired"));
      const pollsBefore = a.loop.polls;
      const before = netInput(await c.info("stats"));
      await waitFor(`${mode}: five more polls`, () => a.loop.polls >= pollsBefore + 6, { timeoutMs: 5000 });
      const sent = netInput(await c.info("stats")) - before;
      a.stop();
      // Five re-reads would be 5 x 4 commands x 1 MB; what is left is SCAN, INFO and the test's own commands.
      expect(sent).toBeLessThan(100_000);
    }
  });
});

describe("least privilege", () => {
  async function aclServer(): Promise<{ r: RedisServer; url: (user: string) => string }> {
    const r = await server();
    const c = r.client();
    await c.call("ACL", "SETUSER", "watcher", "on", ">watch-secret", ...WATCH_ONLY_ACL.split(" "));
    const noTracking = WATCH_ONLY_ACL.split(" ").filter((x) => x !== "+client|tracking");
    await c.call("ACL", "SETUSER", "notrack", "on", ">notrack-secret", ...noTracking);
    await c.call("ACL", "SETUSER", "operator", "on", ">op-secret", ...WATCH_ONLY_ACL.split(" "));
    await c.call("ACL", "SETUSER", "operator", ...FORCE_RELEASE_ACL.split(" "));
    return {
      r,
      url: (user) =>
        `redis://${user}:${user === "notrack" ? "notrack" : user === "watcher" ? "watch" : "op"}-secret@127.0.0.1:${r.port}`,
    };
  }

  it("watches in track mode as a watch-only user, with every change seen", async () => {
    const { r, url } = await aclServer();
    const c = r.client();
    await c.setnx("acl:legacy-lock", "1"); // swept with one EXISTS of its companion
    const a = await agent(url("watcher"), {
      changeDetection: "track",
      lockPatterns: ["*lock*", "mutex:*"],
      sweepMs: 1000,
    });
    await waitFor("track live as watcher", () => a.loop.statuses()[0]!.changeDetection === "track");
    expect(a.log.join("\n")).not.toMatch(/refused|NOPERM/);
    // The bulk reads' lean connection signs in as the same user and is tracked with the reader's redirect.
    const list = String(await c.call("CLIENT", "LIST"));
    const redirect = /id=(\d+) [^\n]*name=lockscope-agent-invalidations /.exec(list)![1];
    expect(list).toMatch(new RegExp(`name=lockscope-agent-reads [^\\n]*user=watcher redir=${redirect} `));
    await c.set("acl:lock:a", "owner-1", "PX", 60_000);
    await waitFor("acquired", () => a.types("acl:lock:a").join() === "acquired");
    await c.set("acl:lock:a", "owner-2", "PX", 60_000);
    await waitFor("owner-changed", () => a.types("acl:lock:a").join() === "acquired,owner-changed");
    expect(a.events.at(-1)!.detail?.observedBy).toBe("notification");
    // A new key under a BCAST prefix is announced too, before any SCAN finds it.
    await c.set("mutex:new", "owner-3", "PX", 60_000);
    await waitFor("mutex acquired", () => a.types("mutex:new").join() === "acquired");
    // The sweep's EXISTS is allowed: called, and never rejected.
    const existsStat = async () =>
      /^cmdstat_exists:calls=(\d+),.*rejected_calls=(\d+)/m.exec(await c.info("commandstats"));
    await waitFor("the sweep's EXISTS", async () => Number((await existsStat())?.[1] ?? 0) > 0);
    expect((await existsStat())?.[2]).toBe("0");
    // The watch-only user cannot write: lockscope's reading never needed it.
    const w = r.client();
    await w.call("AUTH", "watcher", "watch-secret");
    await expect(w.set("x", "1")).rejects.toThrow(/NOPERM/);
    await expect(w.del("acl:lock:a")).rejects.toThrow(/NOPERM/);
  });

  it("falls back to polling with one line naming the missing permission when CLIENT TRACKING is refused", async () => {
    const { r, url } = await aclServer();
    const c = r.client();
    const a = await agent(url("notrack"), { changeDetection: "track" });
    const status = a.loop.statuses()[0]!;
    expect(status.changeDetection).toBe("poll");
    expect(status.note).toMatch(/CLIENT TRACKING refused: NOPERM.*\+client\|tracking/);
    const lines = a.log.filter((l) => /client\|tracking/.test(l));
    expect(lines).toHaveLength(1);
    // Its bulk reads go on the lean connection untracked (there is nothing to track with).
    await waitFor("the untracked lean connection", async () =>
      /name=lockscope-agent-reads [^\n]*user=notrack redir=-1 /.test(String(await c.call("CLIENT", "LIST"))),
    );
    await c.set("acl:lock:b", "owner-1", "PX", 60_000);
    await waitFor("acquired by polling", () => a.types("acl:lock:b").join() === "acquired");
    await c.set("acl:lock:b", "owner-2", "PX", 60_000);
    await waitFor("owner-changed by polling", () => a.types("acl:lock:b").join() === "acquired,owner-changed");
    expect(a.events.at(-1)!.detail?.observedBy).toBe("poll");
    expect(a.loop.statuses()[0]!.up).toBe(true);
  });

  it("a force-release as the watch-only user is refused with the reason; as the operator user it works", async () => {
    const { r, url } = await aclServer();
    const c = r.client();
    await c.set("acl:lock:c", "owner-1", "PX", 60_000);
    for (const user of ["watcher", "operator"]) {
      const a = await agent(url(user), { changeDetection: "track" });
      await waitFor(`${user}: acquired`, () => a.types("acl:lock:c").includes("acquired"));
      const lock = a.loop.locks().find((l) => l.resource === "acl:lock:c")!;
      const result = await a.loop.release({
        requestId: `r-${user}`,
        lockId: lock.id,
        expectedOwner: "owner-1",
        ...(lock.ownerFingerprint ? { expectedFingerprint: lock.ownerFingerprint } : {}),
        dryRun: false,
        actor: "test",
        reason: "least-privilege test",
      });
      if (user === "watcher") {
        expect(result.outcome).toBe("error");
        expect(result.message).toMatch(/NOPERM/);
        expect(await c.get("acl:lock:c")).toBe("owner-1");
      } else {
        expect(result.outcome).toBe("released");
        expect(await c.exists("acl:lock:c")).toBe(0);
      }
      a.stop();
    }
  });
});
