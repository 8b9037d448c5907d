/**
 * The dashboard server: one Node process serving the Next.js pages, the HTTP API and socket.io.
 * Composition root: config -> migrations -> store -> live state -> HTTP + hub.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { loadOrExit } from "../config/env";
import { handleApi } from "./api";
import { loadDashboardConfig } from "./config";
import { attachHub } from "./hub";
import { LiveState } from "./live-state";
import { applyMigrations, projectRoot } from "./migrate";
import { openStore } from "./store";

function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} dashboard ${line}\n`);
}

async function main(): Promise<void> {
  const config = loadOrExit("lockscope dashboard", () => loadDashboardConfig());
  applyMigrations(config.databaseUrl, projectRoot);
  const store = openStore(config.databaseUrl);
  const live = new LiveState();

  let nextHandler: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null = null;
  if (config.ui) {
    const { default: next } = await import("next");
    const app = next({ dev: false, dir: projectRoot, hostname: config.host, port: config.port });
    await app.prepare();
    nextHandler = app.getRequestHandler();
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname === "/api" || url.pathname.startsWith("/api/")) {
      handleApi(req.method ?? "GET", url, { live, store })
        .then((answer) => {
          res.writeHead(answer.status, {
            "content-type": answer.contentType ?? "application/json; charset=utf-8",
            "cache-control": "no-store",
          });
          res.end(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body));
        })
        .catch((err: unknown) => {
          log(`API error on ${url.pathname}: ${err instanceof Error ? err.message : String(err)}`);
          res.writeHead(500, { "content-type": "application/json; charset=utf-8" });
          res.end(JSON.stringify({ error: "internal error; see the dashboard log" }));
        });
      return;
    }
    if (nextHandler) {
      void nextHandler(req, res);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("UI disabled (LOCKSCOPE_UI=off)\n");
  });
  attachHub(server, { live, store, agentToken: config.agentToken, log });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : config.port;
  log(`listening on http://${config.host}:${port} (ui ${config.ui ? "on" : "off"}, store ${config.databaseUrl})`);

  const shutdown = (signal: string) => {
    log(`${signal}: stopping`);
    server.close();
    void store.close().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

main().catch((err: unknown) => {
  process.stderr.write(`lockscope dashboard: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
