import { describe, expect, it } from "vitest";
import { BatchReader } from "../../agent/core/batch-reader";

/** A read whose completion the test controls: every call waits until released. */
function controlledRead() {
  const calls: Array<{ batch: number[]; done: (fail?: Error) => void }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const read = (batch: number[]) =>
    new Promise<string>((resolve, reject) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      calls.push({
        batch,
        done: (fail) => {
          inFlight--;
          if (fail) reject(fail);
          else resolve(batch.join(","));
        },
      });
    });
  return { read, calls, max: () => maxInFlight };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe("BatchReader", () => {
  it("starts a read as soon as a batch is full, while items keep coming", async () => {
    const c = controlledRead();
    const reader = new BatchReader(c.read, 3, 2);
    for (const i of [1, 2]) reader.add(i);
    expect(c.calls).toHaveLength(0);
    reader.add(3);
    expect(c.calls.map((x) => x.batch)).toEqual([[1, 2, 3]]);
    reader.add(4);
    const finished = reader.finish();
    expect(c.calls.map((x) => x.batch)).toEqual([[1, 2, 3], [4]]);
    for (const call of c.calls) call.done();
    expect(await finished).toEqual(["1,2,3", "4"]);
  });

  it("keeps at most maxInFlight reads running and returns results in the order the items came", async () => {
    const c = controlledRead();
    const reader = new BatchReader(c.read, 2, 2);
    for (let i = 1; i <= 10; i++) reader.add(i);
    expect(c.calls).toHaveLength(2);
    const finished = reader.finish();
    // Finish them out of order: the second batch first.
    while (c.calls.some((x) => x.batch.length > 0)) {
      const open = c.calls.filter((x) => x.batch.length > 0);
      const pick = open[open.length - 1]!;
      pick.done();
      pick.batch = [];
      await turn();
    }
    expect(c.max()).toBe(2);
    expect(c.calls).toHaveLength(5);
    expect(await finished).toEqual(["1,2", "3,4", "5,6", "7,8", "9,10"]);
  });

  it("fails finish with the first failure after the reads in flight settle, and reads no batch after it", async () => {
    const c = controlledRead();
    const reader = new BatchReader(c.read, 1, 2);
    for (let i = 1; i <= 5; i++) reader.add(i);
    let settled = false;
    const finished = reader.finish().finally(() => (settled = true));
    finished.catch(() => undefined);
    c.calls[0]!.done(new Error("connection lost"));
    await turn();
    // The second read is still running: finish waits for it.
    expect(settled).toBe(false);
    expect(c.calls).toHaveLength(2);
    c.calls[1]!.done();
    await expect(finished).rejects.toThrow("connection lost");
    expect(c.calls).toHaveLength(2);
  });

  it("counts a read that throws at once as a failed read", async () => {
    const reader = new BatchReader<number, string>(
      () => {
        throw new Error("refused");
      },
      1,
      1,
    );
    reader.add(1);
    await expect(reader.finish()).rejects.toThrow("refused");
  });

  it("with nothing added, finishes with no results and no read", async () => {
    const c = controlledRead();
    expect(await new BatchReader(c.read, 3, 2).finish()).toEqual([]);
    expect(c.calls).toHaveLength(0);
  });
});
