/**
 * The dashboard server: one Node process serving the Next.js pages, the HTTP API and socket.io.
 * Composition root: config -> migrations -> store -> auth -> live state -> HTTP + hub.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { loadOrExit } from "../config/env";
import { AgentGateway } from "./agent-gateway";
import { Authenticator } from "./auth/authenticator";
import { loadDashboardConfig } from "./config";
import { createHttpHandler } from "./http-handler";
import { attachHub } from "./hub";
import { LiveState } from "./live-state";
import { applyMigrations, projectRoot } from "./migrate";
import { RateLimiter } from "./rate-limit";
import { loadSessionSecret } from "./session-secret";
import { openStore } from "./store";

function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} dashboard ${line}\n`);
}

async function main(): Promise<void> {
  const config = loadOrExit("lockscope dashboard", () => loadDashboardConfig());
  applyMigrations(config.databaseUrl, projectRoot);
  const store = openStore(config.databaseUrl);
  const live = new LiveState();
  const agents = new AgentGateway();
  const { auth, oneTimePassword } = await Authenticator.create(
    config.auth,
    loadSessionSecret(config.sessionSecret, config.databaseUrl),
  );

  let pages: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null = null;
  if (config.ui) {
    const { default: next } = await import("next");
    const app = next({ dev: false, dir: projectRoot, hostname: config.host, port: config.port });
    await app.prepare();
    pages = app.getRequestHandler();
  }

  const deps = {
    live,
    store,
    auth,
    agents,
    releaseLimiter: new RateLimiter(config.releasesPerMinute, 60_000),
    signInLimiter: new RateLimiter(20, 60_000),
    secureCookies: config.secureCookies,
  };
  const server = createServer(createHttpHandler(deps, pages, log));
  attachHub(server, { live, store, auth, agents, agentToken: config.agentToken, log });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : config.port;
  log(`listening on http://${config.host}:${port} (ui ${config.ui ? "on" : "off"}, store ${config.databaseUrl})`);
  if (oneTimePassword) {
    // Printed once, never stored: the quick start stays one command and nothing is open without a password.
    log(`no USERS or API_TOKENS configured: sign in as admin with password ${oneTimePassword} (valid until restart)`);
  }

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
