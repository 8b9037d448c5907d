import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { WebhookSender } from "../../lib/server/alerts/webhooks";
import { migrateDatabase, projectRoot } from "../../lib/server/migrate";
import { openStore, type HistoryStore } from "../../lib/server/store";
import { testAlert } from "../harness/alert-fixture";
import { waitFor } from "../harness/ports";
import { createTestDatabase } from "../harness/postgres-server";

// A leader handover while a webhook is in flight (issue 15): dashboard A's sender has the request at the receiver
// (its answer not yet sent), then dashboard B becomes the leader and ticks on the same database. Before the outbox
// rows were claimed, B read the undelivered row and sent it a second time. Each "dashboard" is its own store (its
// own connection pool) on one real database, the receiver a real HTTP server on loopback.

/** Counts requests per body; holds every answer until `release()`, so a delivery stays in flight as long as needed. */
class HoldingReceiver {
  readonly bodies: string[] = [];
  private held: ServerResponse[] = [];
  holding = true;
  private server: Server | null = null;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let data = "";
      req.on("data", (c: Buffer) => (data += c.toString()));
      req.on("end", () => {
        this.bodies.push(data);
        if (this.holding) this.held.push(res);
        else res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", () => resolve()));
    const addr = this.server.address();
    this.url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}/hook`;
  }

  release(): void {
    this.holding = false;
    for (const r of this.held.splice(0)) r.writeHead(204).end();
  }

  async stop(): Promise<void> {
    this.release();
    const s = this.server;
    this.server = null;
    await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
  }
}

const setups = [
  {
    name: "postgresql",
    async create() {
      const db = await createTestDatabase();
      return { url: db.url, cleanup: () => db.drop() };
    },
  },
  {
    name: "sqlite",
    async create() {
      const dir = mkdtempSync(path.join(tmpdir(), "lockscope-handover-"));
      return {
        url: `file:${path.join(dir, "store.db")}`,
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];

describe.each(setups)("webhook delivery across a leader handover on $name", (setup) => {
  let url: string;
  let cleanup: () => Promise<void>;
  let a: HistoryStore;
  let b: HistoryStore;
  let receiver: HoldingReceiver;

  beforeAll(async () => {
    ({ url, cleanup } = await setup.create());
    await migrateDatabase(url, projectRoot);
    a = openStore(url);
    b = openStore(url);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await cleanup();
  });
  beforeEach(async () => {
    receiver = new HoldingReceiver();
    await receiver.start();
  });
  afterEach(async () => {
    await receiver.stop();
  });

  async function raise(key: string): Promise<void> {
    await a.raiseAlert(testAlert(key), () => [{ url: receiver.url, kind: "raised", body: JSON.stringify({ key }) }]);
  }

  it("the new leader does not send a row whose delivery by the old leader is in flight", async () => {
    await raise("in-flight");
    const senderA = new WebhookSender(a, () => undefined, fetch, 10_000);
    const senderB = new WebhookSender(b, () => undefined, fetch, 10_000);
    // A sends; the receiver has the request but holds its answer (A is "paused" mid-delivery).
    const ticking = senderA.tick();
    await waitFor("A's request at the receiver", () => receiver.bodies.length === 1, { timeoutMs: 5000 });
    // B took over the leader lock and ticks on the same outbox.
    const sentByB = await senderB.tick();
    expect(sentByB).toBe(0);
    expect(receiver.bodies).toHaveLength(1);
    // A's answer arrives: the row is delivered, once; B's next tick has nothing to send.
    receiver.release();
    expect(await ticking).toBe(1);
    expect(await senderB.tick()).toBe(0);
    expect(receiver.bodies).toHaveLength(1);
    expect(await b.pendingDeliveries()).toBe(0);
  });

  it("a leader whose lease ran out after it claimed a row sends nothing; the next leader sends it once the claim lapses", async () => {
    receiver.release();
    await raise("lease-lost");
    // A claims, then finds its lease gone (its process was paused past the lease): it must not send.
    let checks = 0;
    const senderA = new WebhookSender(a, () => undefined, fetch, 2000, { owner: "A", canSend: () => ++checks <= 2 });
    expect(await senderA.tick()).toBe(0);
    expect(checks).toBeGreaterThanOrEqual(3);
    expect(receiver.bodies).toHaveLength(0);
    // B leads; A's claim still holds it off the row until it lapses.
    const senderB = new WebhookSender(b, () => undefined, fetch, 2000, { owner: "B" });
    expect(await senderB.tick()).toBe(0);
    const later = () => Date.now() + 60_000;
    const senderBLater = new WebhookSender(b, () => undefined, fetch, 2000, { owner: "B", now: later });
    expect(await senderBLater.tick()).toBe(1);
    expect(receiver.bodies).toEqual([JSON.stringify({ key: "lease-lost" })]);
    expect(await b.pendingDeliveries()).toBe(0);
  });

  // Several dashboards share PostgreSQL (README): two SQLite stores in one process would block each other's
  // synchronous writer, which is not a setup lockscope supports.
  if (setup.name === "postgresql")
    it("two dashboards ticking at once deliver each row exactly once", async () => {
      receiver.release();
      const keys = Array.from({ length: 8 }, (_, i) => `race-${i}`);
      for (const k of keys) await raise(k);
      const senderA = new WebhookSender(a, () => undefined, fetch, 2000, { owner: "A" });
      const senderB = new WebhookSender(b, () => undefined, fetch, 2000, { owner: "B" });
      const [sa, sb] = await Promise.all([senderA.tick(), senderB.tick()]);
      expect(sa + sb).toBe(keys.length);
      expect([...receiver.bodies].sort()).toEqual(keys.map((k) => JSON.stringify({ key: k })).sort());
      expect(await a.pendingDeliveries()).toBe(0);
    });
});
