import { describe, expect, it } from "vitest";
import { MAX_PENDING_NOTIFIED, NotificationBatcher } from "../../agent/sources/redis/notification-batcher";

/** Polls until cond holds or the deadline passes. */
async function until(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("NotificationBatcher", () => {
  it("keeps 100,000 keys announced while a read runs, and hands every one over, bytes intact", async () => {
    const delivered: Buffer[][] = [];
    let release!: () => void;
    const blocked = new Promise<void>((r) => (release = r));
    let overflows = 0;
    const batcher = new NotificationBatcher(
      async (keys) => {
        delivered.push(keys);
        if (delivered.length === 1) await blocked;
      },
      1,
      undefined,
      () => overflows++,
    );
    batcher.add(Buffer.from("lock:first"));
    await until(() => delivered.length === 1);
    // A mass acquisition under a BCAST prefix while the first read is still running; one key is not UTF-8.
    for (let i = 0; i < 100_000; i++) batcher.add(Buffer.from(`lock:order:${i}`));
    batcher.add(Buffer.from([0x6c, 0x6f, 0x63, 0x6b, 0x3a, 0xff, 0xfe]));
    release();
    await until(() => delivered.length === 2);
    expect(overflows).toBe(0);
    expect(delivered[1]).toHaveLength(100_001);
    expect(delivered[1]!.at(-1)).toEqual(Buffer.from([0x6c, 0x6f, 0x63, 0x6b, 0x3a, 0xff, 0xfe]));
    expect(MAX_PENDING_NOTIFIED).toBeGreaterThanOrEqual(200_000);
    batcher.close();
  });

  it("beyond its bound drops new keys and says so, once per key", async () => {
    const delivered: Buffer[][] = [];
    let overflows = 0;
    const batcher = new NotificationBatcher(
      async (keys) => void delivered.push(keys),
      1,
      3,
      () => overflows++,
    );
    for (const k of ["a", "b", "c", "c", "d", "e"]) batcher.add(Buffer.from(k));
    await until(() => delivered.length === 1);
    expect(delivered[0]!.map(String)).toEqual(["a", "b", "c"]);
    expect(overflows).toBe(2);
    batcher.close();
  });
});
