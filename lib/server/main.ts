/**
 * The dashboard server: one Node process serving the Next.js pages, the HTTP API and socket.io.
 * Composition root: config -> migrations -> store -> auth -> live state -> HTTP + hub.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import { loadOrExit } from "../config/env";
import { AgentGateway } from "./agent-gateway";
import { Authenticator } from "./auth/authenticator";
import { usersFileReloader } from "./auth/principals";
import { loadDashboardConfig } from "./config";
import { redact } from "./database-url";
import { createHttpHandler } from "./http-handler";
import { AlertEngine, alertsChanged } from "./alerts/alert-engine";
import { WebhookSender } from "./alerts/webhooks";
import { connectFanout } from "./fanout";
import { attachHub, uiNamespace } from "./hub";
import { LeaderElection, leaderLockSnapshot } from "./leader";
import { Metrics } from "./metrics";
import { RetentionPruner } from "./retention";
import { LiveState } from "./live-state";
import { migrateDatabase, projectRoot } from "./migrate";
import { RateLimiter } from "./rate-limit";
import { loadSessionSecret } from "./session-secret";
import { withGroupCommit } from "./group-commit";
import { EVENTS_PER_WRITE, openStore } from "./store";
import { limitHeapGrowth } from "../runtime/heap-growth";
import { withWriteTiming } from "./store-timing";

function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} dashboard ${line}\n`);
}

async function main(): Promise<void> {
  // Before the live state fills: the heap then stays near what is live (see heap-growth.ts).
  limitHeapGrowth();
  const config = loadOrExit("lockscope dashboard", () => loadDashboardConfig());
  const migrated = await migrateDatabase(config.databaseUrl, projectRoot);
  if (migrated?.applied.length) log(`applied migrations: ${migrated.applied.join(", ")}`);
  if (migrated?.unknown.length)
    log(`database has migrations this version does not know: ${migrated.unknown.join(", ")}`);
  // Late-bound: the metrics registry is built below, from the live state.
  let observeWrite: (seconds: number, events: number) => void = () => undefined;
  // Concurrent agents' messages are coalesced into one write (group commit) of at most one statement's worth of
  // events, storeWriters such writes at once. The write-time histogram times each store write, so one per group.
  const timed = withWriteTiming(openStore(config.databaseUrl, { log }), (s, n) => observeWrite(s, n));
  const store = config.storeGroupCommit
    ? withGroupCommit(timed, {
        maxEvents: EVENTS_PER_WRITE[config.databaseProvider],
        concurrency: config.storeWriters,
      })
    : timed;
  const live = new LiveState();
  const agents = new AgentGateway();
  // Several dashboards (FANOUT_REDIS_URL): shared live state, releases routed to the agent's dashboard, and one
  // leader for alerts and webhooks.
  const serverId = `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
  const cluster = config.fanoutRedisUrl
    ? connectFanout({ url: config.fanoutRedisUrl, serverId, live, agents, log })
    : null;
  const leaderRedis = config.fanoutRedisUrl ? new Redis(config.fanoutRedisUrl, { maxRetriesPerRequest: 1 }) : null;
  leaderRedis?.on("error", (err: Error) => log(`leader redis: ${err.message}`));
  const { auth, oneTimePassword } = await Authenticator.create(
    config.auth,
    loadSessionSecret(config.sessionSecret, config.databaseUrl),
    store,
    { ...usersFileReloader(process.env), log },
  );
  await auth.load();
  auth.start();

  let pages: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null = null;
  if (config.ui) {
    const { default: next } = await import("next");
    const app = next({ dev: false, dir: projectRoot, hostname: config.host, port: config.port });
    await app.prepare();
    pages = app.getRequestHandler();
  }

  const alerts = new AlertEngine({
    live,
    store,
    rules: config.alertRules,
    webhooks: config.webhooks,
    publicUrl: config.publicUrl,
    resolveAfterMs: config.alertResolveAfterMs,
  });
  const openByRule = new Map<string, number>();
  const metrics = new Metrics(live, () => openByRule);
  observeWrite = (s, n) => metrics.observeStoreWrite(config.databaseProvider, s, n);
  // Late-bound: the leader is built below, with the sender's start and stop as its onChange.
  let leading: () => boolean = () => true;
  // Each outbox row is claimed by this dashboard before it is sent, and leadership is re-checked before each send:
  // stopping the timer alone left a tick in flight on a leader that had just lost its lease.
  const webhooks = new WebhookSender(store, log, fetch, 5000, { owner: serverId, canSend: () => leading() });
  const leader = leaderRedis
    ? new LeaderElection(leaderRedis, serverId, {
        leaseMs: config.leaderLeaseMs,
        log,
        // Only the leader sends webhooks: the outbox is shared, a second sender would deliver twice.
        onChange: (leading) => (leading ? webhooks.start() : webhooks.stop()),
      })
    : null;
  if (leader) leading = () => leader.isLeader();
  const pruner = new RetentionPruner(store, {
    eventDays: config.retentionDays,
    rollupDays: config.rollupRetentionDays,
    log,
  });

  // Alerts follow the live state: evaluated after changes (at most every 500 ms) and every 2 s regardless, so
  // time-based rules (held too long) fire without a change.
  let evaluating: NodeJS.Timeout | null = null;
  const evaluateAlerts = () => {
    evaluating = null;
    if (leader && !leader.isLeader()) return;
    alerts
      .evaluate()
      .then((changes) => {
        const open = alerts.openAlerts();
        openByRule.clear();
        for (const a of open) openByRule.set(a.rule, (openByRule.get(a.rule) ?? 0) + 1);
        for (const a of changes.raised) log(`alert raised: ${a.rule} ${a.resource ?? a.source} (${a.severity})`);
        return { changes, open: open.filter((a) => a.state === "open").length };
      })
      .then(({ changes, open }) => {
        if (changes.raised.length || changes.resolved.length) ui?.emit("alerts:changed", alertsChanged(changes, open));
      })
      .catch((err: unknown) => log(`alert evaluation failed: ${err instanceof Error ? err.message : String(err)}`));
  };
  const scheduleAlerts = () => {
    evaluating ??= setTimeout(evaluateAlerts, 500);
  };

  const deps = {
    live,
    store,
    auth,
    agents,
    releaseLimiter: new RateLimiter(config.releasesPerMinute, 60_000),
    signInLimiter: new RateLimiter(20, 60_000),
    secureCookies: config.secureCookies,
    alerts,
    metrics,
    onAlertsChanged: () => {
      void store
        .countOpenAlerts()
        .then((open) => ui?.emit("alerts:changed", { raised: [], resolved: [], open }))
        .catch((err: unknown) =>
          log(`could not read open alerts: ${err instanceof Error ? err.message : String(err)}`),
        );
    },
  };
  const server = createServer(createHttpHandler(deps, pages, log));
  const io = attachHub(server, {
    live,
    store,
    auth,
    agents,
    agentToken: config.agentToken,
    log,
    onEvents: (events) => metrics.observeEvents(events),
    onChange: scheduleAlerts,
    ...(cluster ? { adapter: cluster.adapter, fanout: cluster.fanout } : {}),
  });
  cluster?.attach(io);
  const ui = uiNamespace(io);
  const alertTimer = setInterval(scheduleAlerts, 2000);
  alertTimer.unref();
  if (leader) leader.start();
  else webhooks.start();
  pruner.start();
  // Every dashboard shows the leader lock in its own view (read from Redis, so all agree on who holds it).
  let leaderSince = { holder: null as string | null, at: new Date().toISOString() };
  const leaderView = leader
    ? setInterval(() => {
        leader
          .view()
          .then((view) => {
            const now = new Date().toISOString();
            if (view.holder !== leaderSince.holder) leaderSince = { holder: view.holder, at: now };
            const source = `fanout:${redact(config.fanoutRedisUrl!)}`;
            cluster?.show(live.applySnapshot(leaderLockSnapshot(view, source, leaderSince.at, now)));
          })
          .catch((err: unknown) => log(`leader view: ${err instanceof Error ? err.message : String(err)}`));
      }, 1000)
    : null;
  leaderView?.unref();

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : config.port;
  log(
    `listening on http://${config.host}:${port} (ui ${config.ui ? "on" : "off"}, store ${redact(config.databaseUrl)})`,
  );
  if (oneTimePassword) {
    // Printed once, never stored: the quick start stays one command and nothing is open without a password.
    log(`no USERS or API_TOKENS configured: sign in as admin with password ${oneTimePassword} (valid until restart)`);
  }

  const shutdown = (signal: string) => {
    log(`${signal}: stopping`);
    clearInterval(alertTimer);
    if (leaderView) clearInterval(leaderView);
    auth.stop();
    webhooks.stop();
    pruner.stop();
    server.close();
    // Resign the leader lock first, so another dashboard takes over alerts now rather than after the lease.
    void Promise.allSettled([leader?.stop(), cluster?.close(), store.close()]).finally(() => {
      leaderRedis?.disconnect();
      process.exit(0);
    });
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

main().catch((err: unknown) => {
  process.stderr.write(`lockscope dashboard: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
