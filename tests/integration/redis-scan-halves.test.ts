import { afterEach, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { IoredisLockPort } from "../../agent/sources/redis/redis-client";
import { RedisSource } from "../../agent/sources/redis/redis-source";
import { startRedis } from "../harness/redis";

/**
 * With no budget, a pass walks the two halves of the server's hash table at once (redis-source.ts, scanHalves).
 * Against a real redis-server whose table grows and rehashes while the pass runs (each SCAN step is followed by
 * writes of new keys, as a busy server would see them), every lock key present throughout is still found, exactly
 * as by the one-walk pass of a paced source.
 */
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const LOCKS = 30_000;

/** The real port, recording the cursors asked for and answered, and writing `grow` new keys after each step. */
class GrowingPort extends IoredisLockPort {
  readonly cursors: string[] = [];
  readonly replies: string[] = [];
  private written = 0;

  constructor(
    reader: Redis,
    private readonly writer: Redis,
    private readonly grow: number,
  ) {
    super(reader);
  }

  override async scan(cursor: string, count: number, match?: Buffer) {
    this.cursors.push(cursor);
    const reply = await super.scan(cursor, count, match);
    this.replies.push(reply.cursor);
    if (this.written < 120_000) {
      const p = this.writer.pipeline();
      for (let i = 0; i < this.grow; i++) p.set(`filler:${this.written++}`, "x");
      await p.exec();
    }
    return reply;
  }
}

async function pass(halves: boolean): Promise<{ found: Set<string>; port: GrowingPort; keysAfter: number }> {
  const r = await startRedis();
  cleanup.push(() => r.stop());
  const admin = r.client();
  const reader = r.client();
  cleanup.push(() => {
    admin.disconnect();
    reader.disconnect();
  });
  // lock:0 .. lock:29999 (values "value:<n>"): under 32,768, so the table doubles once the fillers come.
  await admin.call("DEBUG", "POPULATE", String(LOCKS), "lock", "8");
  const port = new GrowingPort(reader, admin, 1500);
  if (!halves) port.halvesScan = () => false;
  let ids = 0;
  const source = new RedisSource(port, {
    sourceId: r.url,
    agentId: "a1",
    lockPatterns: ["lock:*"],
    scanCount: 500,
    visitBudgetPerPoll: 0,
    valuePreviewBytes: 64,
    newId: () => `ev-${++ids}`,
    serverTimeBudgetFraction: 0,
  });
  const out = await source.poll();
  const found = new Set(out.upserts.map((l) => l.resource));
  return { found, port, keysAfter: await admin.dbsize() };
}

describe("a pass over the two halves of the table at once", () => {
  it("finds every lock key present throughout while the table grows and rehashes under it", async () => {
    const { found, port, keysAfter } = await pass(true);
    // Both walks ran: one from cursor 0, one from cursor 1, and each went on past its first step.
    expect(port.cursors.slice(0, 2)).toEqual(["0", "1"]);
    expect(port.cursors.length).toBeGreaterThan(4);
    // The table doubled (at least once) while the pass ran.
    expect(keysAfter).toBeGreaterThan(65_536);
    const missing = Array.from({ length: LOCKS }, (_, i) => `lock:${i}`).filter((k) => !found.has(k));
    expect(missing.slice(0, 5), `${missing.length} of ${LOCKS} lock keys not found`).toEqual([]);
  });

  it("is one walk from cursor 0 where the server's cursor order is not known", async () => {
    const { found, port } = await pass(false);
    // One walk: every step after the first goes on from the cursor the step before answered, to the end.
    expect(port.cursors[0]).toBe("0");
    expect(port.cursors.slice(1)).toEqual(port.replies.slice(0, -1));
    expect(port.replies.at(-1)).toBe("0");
    expect(found.size).toBe(LOCKS);
  });
});
