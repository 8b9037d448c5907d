import { createServer, type Server } from "node:http";

export interface Received {
  path: string;
  body: unknown;
}

/** A local HTTP receiver for webhook tests, on a fixed loopback port so it can be "down" and come back. */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private server: Server | null = null;

  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  start(): Promise<void> {
    this.server = createServer((req, res) => {
      let data = "";
      req.on("data", (c: Buffer) => (data += c.toString()));
      req.on("end", () => {
        try {
          this.received.push({ path: req.url ?? "", body: JSON.parse(data) });
        } catch {
          this.received.push({ path: req.url ?? "", body: data });
        }
        res.writeHead(204).end();
      });
    });
    return new Promise((resolve) => this.server!.listen(this.port, "127.0.0.1", () => resolve()));
  }

  stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    return new Promise((resolve) => (s ? s.close(() => resolve()) : resolve()));
  }
}
