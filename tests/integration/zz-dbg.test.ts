import { it } from "vitest";
import { startRedis } from "/work/main/tests/harness/redis";
import { startInProcessAgent } from "/work/main/tests/harness/in-process-agent";
import { waitFor } from "/work/main/tests/harness/ports";
it("dbg", async () => {
  const redis = await startRedis();
  const c = redis.client();
  const track = await startInProcessAgent(redis.url, { changeDetection: "track" });
  await waitFor("track", () => track.loop.statuses()[0]!.changeDetection === "track");
  await c.set("a:lock", "1", "PX", 60000);
  await waitFor("seen", () => track.types("a:lock").length === 1);
  const list = String(await c.call("CLIENT", "LIST"));
  const id = /id=(\d+) [^\n]*name=lockscope-agent-invalidations/.exec(list)![1]!;
  await c.call("CLIENT", "KILL", "ID", id);
  const t0 = Date.now();
  await c.set("a:lock", "2", "PX", 60000);
  await waitFor("seen2", () => track.types("a:lock").length === 2);
  await waitFor("new", async () => {
    const l = String(await c.call("CLIENT", "LIST"));
    const now = /id=(\d+) [^\n]*name=lockscope-agent-invalidations/.exec(l)?.[1];
    return now !== undefined && now !== id && track.loop.statuses()[0]!.changeDetection === "track";
  });
  console.log("track at", Date.now() - t0, String(await c.call("CLIENT", "LIST")).split("\n").filter(l=>/reads|agent /.test(l)).map(l => l.replace(/ age.*flags=/," flags=").replace(/ db=.*redir=/, " redir=")).join("\n"));
  await c.set("a:lock", "3", "PX", 60000);
  await waitFor("seen3", () => track.types("a:lock").length === 3);
  console.log(Date.now() - t0, track.log.join("\n"));
  console.log(JSON.stringify(track.events.map(e => [e.type, e.detail?.observedBy])));
  track.stop(); await redis.stop();
});
