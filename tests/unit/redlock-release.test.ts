import { createHash } from "node:crypto";
import { fingerprintOf } from "../../agent/release/fingerprint";
import { describe, expect, it } from "vitest";
import { DEFAULT_LOCK_PATTERNS } from "../../agent/config";
import type { RedisReleasePort } from "../../agent/sources/redis/redis-release";
import type { KeySample } from "../../agent/sources/redis/redis-port";
import { redlockNodeStatus } from "../../agent/sources/redlock/redlock-node-status";
import type { RedlockNodePort } from "../../agent/sources/redlock/redlock-port";
import {
  aggregateRelease,
  decideRelease,
  dryRunNode,
  releaseSteps,
  type NodeReading,
} from "../../agent/sources/redlock/redlock-release";
import { RedlockSource } from "../../agent/sources/redlock/redlock-source";
import type { ReleaseCommand, ReleaseNodeResult, ReleaseOutcome } from "../../lib/contract/release";

const A = "0123456789abcdef0123456789abcdef";
const B = "fedcba9876543210fedcba9876543210";
const nodes = (k: number) => Array.from({ length: k }, (_, i) => `redis://127.0.0.1:${7000 + i}/0`);
const results = (...outcomes: ReleaseOutcome[]): ReleaseNodeResult[] =>
  outcomes.map((outcome, i) => ({ node: `n${i}`, outcome }));

describe("aggregateRelease", () => {
  const cases: Array<[string, ReleaseOutcome[], ReleaseOutcome, RegExp]> = [
    ["deleted everywhere", ["released", "released", "released"], "released", /^released on 3 of 3 nodes$/],
    ["deleted, some already gone", ["released", "nothing-to-do", "released"], "released", /already gone on 1 node/],
    [
      "deleted on a majority, one silent",
      ["released", "released", "error"],
      "released",
      /1 node did not confirm \(n2\)/,
    ],
    [
      "deleted on one, a quorum silent: may still hold",
      ["released", "error", "error"],
      "released",
      /may still hold a quorum on the 2/,
    ],
    [
      "someone else's token on one node",
      ["released", "released", "refused-owner-changed"],
      "refused-owner-changed",
      /1 node holds another token now \(n2\), left alone; deleted on 2 nodes/,
    ],
    [
      "another token everywhere",
      ["refused-owner-changed", "refused-owner-changed", "refused-owner-changed"],
      "refused-owner-changed",
      /nothing deleted/,
    ],
    ["refused beats errors", ["error", "refused-owner-changed", "nothing-to-do"], "refused-owner-changed", /n1/],
    ["only errors and gone", ["error", "nothing-to-do", "error"], "error", /no node confirmed a delete/],
    ["all gone", ["nothing-to-do", "nothing-to-do", "nothing-to-do"], "nothing-to-do", /already gone on every node/],
    ["no nodes", [], "nothing-to-do", /no node/],
  ];
  for (const [name, outcomes, expected, message] of cases) {
    it(name, () => {
      const r = aggregateRelease(results(...outcomes), 2);
      expect(r.outcome).toBe(expected);
      expect(r.message).toMatch(message);
    });
  }
});

describe("decideRelease", () => {
  const read = (token: string | null, answered = true): NodeReading => ({ node: "n", answered, token });

  it("goes ahead when the winner is the owner the operator saw", () => {
    expect(
      decideRelease({ expectedOwner: A, winner: A, votes: 3, needed: 3, readings: [read(A), read(A), read(A)] }),
    ).toEqual({ kind: "go" });
  });

  it("refuses when another token wins now, naming what each node holds", () => {
    const d = decideRelease({
      expectedOwner: A,
      winner: B,
      votes: 2,
      needed: 2,
      readings: [read(B), read(B), read(A), read(null), { node: "n", answered: false, token: null, error: "timeout" }],
    });
    expect(d.kind).toBe("stop");
    if (d.kind !== "stop") return;
    expect(d.result.outcome).toBe("refused-owner-changed");
    expect(d.result.message).toMatch(/nothing deleted/);
    expect(d.result.perNode.map((n) => n.outcome)).toEqual([
      "refused-owner-changed",
      "refused-owner-changed",
      "refused",
      "nothing-to-do",
      "error",
    ]);
  });

  it("nothing to do when no answering node has the key; an error when none answered", () => {
    const gone = decideRelease({
      expectedOwner: A,
      winner: A,
      votes: 0,
      needed: 2,
      readings: [read(null), read(null)],
    });
    expect(gone.kind === "stop" && gone.result.outcome).toBe("nothing-to-do");
    const silent = decideRelease({
      expectedOwner: A,
      winner: null,
      votes: 0,
      needed: 2,
      readings: [read(null, false), read(null, false)],
    });
    expect(silent.kind === "stop" && silent.result.outcome).toBe("error");
  });
});

describe("release plan", () => {
  it("one step per node, in node order", () => {
    expect(releaseSteps("lock:a", ["n1", "n2"], A, { kind: "string" })).toEqual([
      `DEL lock:a on n1 only if its value is still ${A}`,
      `DEL lock:a on n2 only if its value is still ${A}`,
    ]);
    const [hash] = releaseSteps("r", ["n1"], "uuid:1", { kind: "hash", channel: "redisson_lock__channel:{r}" });
    expect(hash).toBe(
      "DEL r on n1 only if the hash still has holder field uuid:1, then PUBLISH redisson_lock__channel:{r} 0 there (wakes Redisson waiters)",
    );
  });

  it("dry-run lines say what each node holds now", () => {
    expect(dryRunNode({ node: "n", answered: true, token: A }, A).detail).toMatch(/would be deleted/);
    expect(dryRunNode({ node: "n", answered: true, token: B }, A).detail).toMatch(/another token .*left alone/);
    expect(dryRunNode({ node: "n", answered: true, token: null }, A).detail).toMatch(/absent/);
    expect(dryRunNode({ node: "n", answered: false, token: null, error: "x" }, A).detail).toMatch(/no answer \(x\)/);
  });
});

describe("redlockNodeStatus", () => {
  const base = { node: "n1", missedPolls: 0, lastAnswerAt: "2026-01-01T00:00:00.000Z" };
  it("up, slow (reason in error) and down; no stale figures for a silent node", () => {
    expect(redlockNodeStatus({ ...base, state: "up", latencyMs: 0.4, clockOffsetMs: -1.2 }, 250)).toEqual({
      id: "n1",
      role: "redlock-member",
      up: true,
      latencyMs: 0.4,
      clockOffsetMs: -1.2,
    });
    expect(redlockNodeStatus({ ...base, state: "slow", latencyMs: 400 }, 250)).toMatchObject({
      up: true,
      error: "slow: answers take over 250 ms",
    });
    const silent = redlockNodeStatus(
      { ...base, state: "slow", latencyMs: 1, clockOffsetMs: 2, error: "no answer within 300 ms", missedPolls: 1 },
      250,
    );
    expect(silent).toEqual({ id: "n1", role: "redlock-member", up: true, error: "no answer within 300 ms" });
    expect(redlockNodeStatus({ node: "n1", state: "down", error: "not polled yet", missedPolls: 0 }, 250)).toEqual({
      id: "n1",
      role: "redlock-member",
      up: false,
      error: "not polled yet",
    });
  });
});

/** A fake Redis node with the read port and the release writer; can be frozen (answers nothing until thawed). */
class FakeNode implements RedlockNodePort, RedisReleasePort {
  readonly keys = new Map<string, { value: Buffer; expiresAt: number }>();
  frozen = false;
  writes = 0;
  /** Runs just before the next compare-and-delete: a client acting between the re-read and the delete. */
  beforeDelete: (() => void) | null = null;
  private waiting: Array<() => void> = [];

  constructor(private readonly clock: { now: number }) {}

  thaw(): void {
    this.frozen = false;
    for (const w of this.waiting.splice(0)) w();
  }

  private async gate(): Promise<void> {
    if (this.frozen) await new Promise<void>((r) => this.waiting.push(r));
  }

  private live(k: string) {
    const v = this.keys.get(k);
    if (v && v.expiresAt <= this.clock.now) this.keys.delete(k);
    return this.keys.get(k);
  }

  async scan(cursor: string) {
    await this.gate();
    const keys = [...this.keys.keys()].filter((k) => this.live(k)).map((k) => Buffer.from(k));
    return { cursor: "0", keys: cursor === "0" ? keys : [] };
  }

  async sample(keys: Buffer[], _t: ReadonlyArray<string | undefined>, previewBytes: number): Promise<KeySample[]> {
    await this.gate();
    return keys.map((key) => {
      const v = this.live(key.toString());
      if (!v) return { key, type: "none", pttl: -2 };
      return {
        key,
        type: "string",
        pttl: v.expiresAt - this.clock.now,
        string: { prefix: v.value.subarray(0, previewBytes), length: v.value.length },
      };
    });
  }

  async time() {
    await this.gate();
    const ms = Date.now();
    return [String(Math.floor(ms / 1000)), String((ms % 1000) * 1000)];
  }

  async compareAndDelete(key: Buffer, sha1Hex: string) {
    await this.gate();
    this.beforeDelete?.();
    this.beforeDelete = null;
    this.writes++;
    const v = this.live(key.toString());
    if (!v || createHash("sha1").update(v.value).digest("hex") !== sha1Hex) return 0;
    this.keys.delete(key.toString());
    return 1;
  }

  async purgeFairWaiter(): Promise<number> {
    return 0;
  }

  async deleteIfHashField(): Promise<number> {
    throw new Error("not used: string locks only");
  }
}

const TIMEOUT = 60;

function setup() {
  const clock = { now: 1_800_000_000_000 };
  const fakes = Array.from({ length: 5 }, () => new FakeNode(clock));
  let ids = 0;
  const source = new RedlockSource(
    fakes.map((f, i) => ({ id: nodes(5)[i]!, port: f, writer: f })),
    {
      group: "orders",
      agentId: "agent-1",
      newId: () => `e${++ids}`,
      lockPatterns: DEFAULT_LOCK_PATTERNS,
      nodeTimeoutMs: TIMEOUT,
      now: () => clock.now,
    },
  );
  const put = (key: string, token: string, on: number[]) =>
    on.forEach((i) => fakes[i]!.keys.set(key, { value: Buffer.from(token), expiresAt: clock.now + 30_000 }));
  const cmd = (lockId: string, over: Partial<ReleaseCommand> = {}): ReleaseCommand => ({
    requestId: "r1",
    lockId,
    expectedOwner: A,
    expectedFingerprint: fingerprintOf(Buffer.from(A)),
    dryRun: false,
    actor: "ops1",
    reason: "holder crashed",
    ...over,
  });
  return { clock, fakes, source, put, cmd };
}

describe("RedlockSource.release", () => {
  it("dry run: the plan, what each node holds, and no write", async () => {
    const { fakes, source, put, cmd } = setup();
    put("lock:a", A, [0, 1, 2, 3]);
    put("lock:a", B, [4]);
    await source.poll();
    const [lock] = source.locks();
    const { result, output } = await source.release(cmd(lock!.id, { dryRun: true }));
    expect(result.outcome).toBe("dry-run");
    expect(result.message).toMatch(/4 of 5 nodes hold the token \(3 needed\)/);
    expect(result.plan).toEqual(nodes(5).map((n) => `DEL lock:a on ${n} only if its value is still ${A}`));
    expect(result.perNode.map((n) => n.detail)).toEqual([
      ...Array(4).fill("holds the token: would be deleted"),
      `holds another token (${B.slice(0, 10)}…): would be left alone`,
    ]);
    expect(fakes.every((f) => f.writes === 0)).toBe(true);
    expect(output.events).toEqual([]);
  });

  it("releases on every node in parallel and reports the removal at once", async () => {
    const { fakes, source, put, cmd } = setup();
    put("lock:a", A, [0, 1, 2, 3, 4]);
    await source.poll();
    const [lock] = source.locks();
    const { result, output } = await source.release(cmd(lock!.id));
    expect(result.outcome).toBe("released");
    expect(result.message).toBe("released on 5 of 5 nodes (by ops1)");
    expect(result.perNode.every((n) => n.outcome === "released")).toBe(true);
    expect(fakes.every((f) => f.keys.size === 0)).toBe(true);
    expect(output.removed).toEqual([lock!.id]);
    expect(output.events).toMatchObject([{ type: "released", detail: { reason: "force-released", by: "ops1" } }]);
    expect(source.locks()).toEqual([]);
    // The next poll finds nothing to report.
    expect((await source.poll()).events).toEqual([]);
  });

  it("refuses and writes nothing when another token has won since the operator looked", async () => {
    const { fakes, source, put, cmd } = setup();
    put("lock:a", A, [0, 1, 2, 3, 4]);
    await source.poll();
    const [lock] = source.locks();
    put("lock:a", B, [0, 1, 2, 3, 4]); // A's lease ran out and B acquired, between the view and the click
    const { result } = await source.release(cmd(lock!.id));
    expect(result.outcome).toBe("refused-owner-changed");
    expect(result.perNode.map((n) => n.outcome)).toEqual(Array(5).fill("refused-owner-changed"));
    expect(fakes.every((f) => f.writes === 0 && f.keys.get("lock:a")?.value.toString() === B)).toBe(true);
  });

  it("a token replaced between re-read and delete is left alone on that node", async () => {
    const { fakes, source, put, cmd } = setup();
    put("lock:a", A, [0, 1, 2, 3, 4]);
    await source.poll();
    const [lock] = source.locks();
    fakes[2]!.beforeDelete = () => put("lock:a", B, [2]);
    const { result, output } = await source.release(cmd(lock!.id));
    expect(result.outcome).toBe("refused-owner-changed");
    expect(result.perNode[2]).toEqual({
      node: nodes(5)[2],
      outcome: "refused-owner-changed",
      detail: `holds ${B.slice(0, 10)}…`,
    });
    expect(result.perNode.filter((n) => n.outcome === "released")).toHaveLength(4);
    expect(fakes[2]!.keys.get("lock:a")?.value.toString()).toBe(B);
    // What is left is B on one node: residue, shown at once, not a quorum lost while valid.
    expect(output.upserts[0]?.quorum).toMatchObject({ state: "minority", votes: 1 });
    expect(output.upserts[0]?.owner).toBe(B);
  });

  it("a frozen node costs one deadline per step and is reported as an error", async () => {
    const { fakes, source, put, cmd } = setup();
    put("lock:a", A, [0, 1, 2, 3, 4]);
    await source.poll();
    const [lock] = source.locks();
    fakes[4]!.frozen = true;
    const started = performance.now();
    const { result, output } = await source.release(cmd(lock!.id));
    // Re-read, delete and the look after it: three deadlines at most, never one per command queued.
    expect(performance.now() - started).toBeLessThan(3 * TIMEOUT + 150);
    expect(result.outcome).toBe("released");
    expect(result.perNode[4]).toMatchObject({ outcome: "error", detail: expect.stringMatching(/may still run there/) });
    expect(result.message).toMatch(/1 node did not confirm/);
    expect(output.removed).toEqual([lock!.id]); // four answering nodes confirm absence: a majority
    fakes[4]!.thaw();
    await new Promise((r) => setTimeout(r, 0));
    // The queued conditional delete ran when the node woke, and removed only the token it compared.
    expect(fakes[4]!.keys.has("lock:a")).toBe(false);
  });

  it("an unknown lock is nothing to do", async () => {
    const { source, cmd } = setup();
    expect((await source.release(cmd("nope"))).result.outcome).toBe("nothing-to-do");
  });
});
