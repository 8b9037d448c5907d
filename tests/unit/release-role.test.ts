import { describe, expect, it } from "vitest";
import type { Lock } from "../../lib/contract/lock";
import type { ReleaseCommand } from "../../lib/contract/release";
import { releaseLock } from "../../lib/server/handlers/release-api";
import type { ApiDeps, ApiRequest } from "../../lib/server/handlers/types";
import type { NewAuditEntry } from "../../lib/server/store";

function lock(backend: Lock["backend"]): Lock {
  return {
    id: "lock1",
    backend,
    source: "src",
    resource: "app:42",
    owner: "pid 7@2026-12-01T09:00:00+00:00",
    library: "postgres-advisory",
    rule: "r",
    ttlMs: null,
    holder: null,
    waiters: [],
    since: "2026-12-01T09:00:00Z",
    observedAt: "2026-12-01T09:00:01Z",
    kind: "advisory exclusive",
    valuePreview: null,
    hazards: [],
    agentId: "a1",
  };
}

function harness(backend: Lock["backend"], role: "operator" | "admin") {
  const audits: NewAuditEntry[] = [];
  const sent: ReleaseCommand[] = [];
  const deps = {
    live: { lock: () => lock(backend) },
    store: { addAudit: async (e: NewAuditEntry) => void audits.push(e) },
    auth: { checkCsrf: () => null },
    releaseLimiter: { take: () => 0 },
    agents: {
      release: async (_agent: string, cmd: ReleaseCommand) => {
        sent.push(cmd);
        return { outcome: "dry-run", message: "ok", plan: [], perNode: [] };
      },
    },
  } as unknown as ApiDeps;
  const req: ApiRequest = {
    method: "POST",
    url: new URL("http://x/api/locks/lock1/release"),
    headers: {},
    principal: { name: "pat", role, via: "token" } as ApiRequest["principal"],
    clientAddress: "127.0.0.1",
    json: async () => ({ expectedOwner: "pid 7@2026-12-01T09:00:00+00:00", reason: "stuck job", dryRun: true }),
  };
  return { deps, req, audits, sent };
}

describe("the role a force-release needs, per backend", () => {
  it.each(["postgres", "mysql"] as const)("a %s lock needs admin: an operator is refused and audited", async (b) => {
    const h = harness(b, "operator");
    const answer = await releaseLock(h.req, h.deps, "lock1");
    expect(answer.status).toBe(403);
    expect((answer.body as { message: string }).message).toContain("needs admin");
    expect(h.sent).toHaveLength(0);
    expect(h.audits).toMatchObject([{ outcome: "rejected", backend: b, actor: "pat" }]);
  });

  it("an admin may ask for a database lock's dry run", async () => {
    const h = harness("postgres", "admin");
    expect((await releaseLock(h.req, h.deps, "lock1")).status).toBe(200);
    expect(h.sent).toHaveLength(1);
  });

  it("an operator still releases a Redis lock", async () => {
    const h = harness("redis", "operator");
    expect((await releaseLock(h.req, h.deps, "lock1")).status).toBe(200);
    expect(h.sent).toHaveLength(1);
  });
});
