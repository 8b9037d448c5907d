import type mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AlertsResponse } from "../../lib/contract/alerts";
import type { EventsResponse, LocksResponse } from "../../lib/contract/api";
import type { ReleaseResult } from "../../lib/contract/release";
import {
  connectionId,
  createMysqlDatabase,
  metadataLockInfoInstalled,
  MYSQL_URL,
  setMetadataLockInfo,
  type MysqlTestDatabase,
} from "../harness/mysql";
import { backendPid, createPgDatabase, PG_ADMIN_URL, type PgTestDatabase } from "../harness/postgres";
import { startAgent, startDashboard, waitFor, type Dashboard, type Proc } from "../harness/stack";

// A real agent process configured only with POSTGRES_URLS and MYSQL_URLS, streaming to a real dashboard: the
// database locks reach the API, the history, the metrics and the guarded release like every other backend.
let dashboard: Dashboard;
let agent: Proc;
let pgDb: PgTestDatabase;
let myDb: MysqlTestDatabase;
let pluginWasInstalled = false;

beforeAll(async () => {
  pluginWasInstalled = await metadataLockInfoInstalled();
  await setMetadataLockInfo(true);
  pgDb = await createPgDatabase("lockscope_dbstack");
  myDb = await createMysqlDatabase("lockscope_dbstack");
  dashboard = await startDashboard();
  agent = startAgent(dashboard.url, { REDIS_URLS: "", POSTGRES_URLS: PG_ADMIN_URL, MYSQL_URLS: MYSQL_URL });
});

afterAll(async () => {
  await agent?.stop();
  await dashboard?.stop();
  dashboard?.cleanup();
  await pgDb?.drop();
  await myDb?.drop();
  await setMetadataLockInfo(pluginWasInstalled);
});

async function seen(backend: string, resource: string) {
  let found: LocksResponse["locks"][number] | undefined;
  await waitFor(`${resource} in the dashboard`, async () => {
    found = (await dashboard.allLocks(`backend=${backend}`)).locks.find((l) => l.resource === resource);
    return found !== undefined;
  });
  return found!;
}

function release(id: string, body: unknown, role: "operator" | "admin") {
  return dashboard.request(
    `/api/locks/${id}/release`,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    role,
  );
}

describe("database locks through the agent and the dashboard", () => {
  it("shows a PostgreSQL advisory lock with its session, records its history, and releases it only for an admin", async () => {
    const s = await pgDb.session("stack-holder");
    const pid = await backendPid(s);
    await s.query("SELECT pg_advisory_lock(31337)");
    const lock = await seen("postgres", `${pgDb.name}:31337`);
    expect(lock.backend).toBe("postgres");
    expect(lock.holder).toMatchObject({ pid, application: "stack-holder", level: "session" });
    expect(lock.database?.holders[0]?.session.pid).toBe(pid);

    // The agent sends nothing before its first poll has read both servers: a lock shown means both were polled.
    // (Its snapshot on connect once showed MariaDB, slower to answer on a loaded machine, "not polled yet" and down,
    // and the dashboard raised a critical source-down alert for it.)
    const health = await dashboard.get<{ sources: Array<{ kind: string; up: boolean }> }>("/api/health");
    expect(health.sources.filter((x) => x.kind === "postgres" || x.kind === "mysql")).toEqual([
      expect.objectContaining({ kind: "postgres", up: true }),
      expect.objectContaining({ kind: "mysql", up: true }),
    ]);
    const { alerts } = await dashboard.get<AlertsResponse>("/api/alerts?limit=100");
    expect(alerts.filter((a) => a.rule === "source-down")).toEqual([]);
    const metrics = await (await dashboard.request("/api/metrics", {}, "viewer")).text();
    expect(metrics).toMatch(/backend="postgres"/);

    const body = {
      expectedOwner: lock.owner,
      expectedFingerprint: lock.ownerFingerprint,
      reason: "stuck migration",
      dryRun: true,
    };
    const asOperator = await release(lock.id, body, "operator");
    expect(asOperator.status).toBe(403);
    const dry = await release(lock.id, body, "admin");
    expect(dry.status).toBe(200);
    expect(((await dry.json()) as ReleaseResult).plan.join("\n")).toContain(`End session pid ${pid}`);

    const real = await release(lock.id, { ...body, dryRun: false, confirm: lock.resource }, "admin");
    expect(((await real.json()) as ReleaseResult).outcome).toBe("released");
    await waitFor("the release in the history", async () => {
      const ev = await dashboard.get<EventsResponse>(
        `/api/events?backend=postgres&resource=${encodeURIComponent(lock.resource)}`,
      );
      return ev.events.some((e) => e.type === "released");
    });
  });

  it("shows a MariaDB GET_LOCK lock with its connection and a waiter", async () => {
    const holder: mysql.Connection = await myDb.connection();
    const waiter = await myDb.connection();
    const hid = await connectionId(holder);
    const name = `${myDb.name}:stack`;
    await holder.query("SELECT GET_LOCK(?, 0)", [name]);
    const waits = waiter.query("SELECT GET_LOCK(?, 30)", [name]);
    let lock = await seen("mysql", name);
    await waitFor("the waiter in the dashboard", async () => {
      lock = await seen("mysql", name);
      return lock.waiters.length === 1;
    });
    expect(lock.holder).toMatchObject({ connection: hid, user: "root" });
    await holder.query("SELECT RELEASE_LOCK(?)", [name]);
    await waits;
  });
});
