import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startDashboard } from "../harness/stack";

const root = path.resolve(import.meta.dirname, "..", "..");
const tsx = path.join(root, "node_modules", ".bin", "tsx");
const dir = mkdtempSync(path.join(tmpdir(), "lockscope-first-run-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the dashboard expecting it to fail at start; resolves with its exit code and output. */
function failingDashboard(databaseUrl: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(tsx, ["lib/server/main.ts"], {
      cwd: root,
      env: {
        ...process.env,
        PORT: "0",
        LOCKSCOPE_UI: "off",
        AGENT_TOKEN: "first-run-agent-token-0123",
        API_TOKENS: "t:viewer:first-run-viewer-token-0123",
        DATABASE_URL: databaseUrl,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe("the dashboard's first start", () => {
  it("creates the database's folder when it does not exist (a fresh clone has no ./data)", async () => {
    const file = path.join(dir, "fresh", "nested", "lockscope.db");
    const dashboard = await startDashboard({ env: { DATABASE_URL: `file:${file}` } });
    try {
      const health = await dashboard.get<{ status: string }>("/api/health");
      expect(health.status).toBe("ok");
      expect(dashboard.output()).toContain(`store file:${file}`);
    } finally {
      await dashboard.stop();
      dashboard.cleanup();
    }
  });

  it("says what is wrong with the path instead of Prisma's 'External error id#0'", async () => {
    writeFileSync(path.join(dir, "a-file"), "not a folder");
    const blocked = await failingDashboard(`file:${path.join(dir, "a-file", "data", "lockscope.db")}`);
    expect(blocked.code).toBe(1);
    expect(blocked.output).toContain(
      `lockscope dashboard: cannot create the database folder ${path.join(dir, "a-file", "data")}: ` +
        `${path.join(dir, "a-file")} is a file, not a folder\n`,
    );

    mkdirSync(path.join(dir, "a-folder.db"));
    const folder = await failingDashboard(`file:${path.join(dir, "a-folder.db")}`);
    expect(folder.code).toBe(1);
    expect(folder.output).toContain(
      `lockscope dashboard: database migration failed for file:${path.join(dir, "a-folder.db")}: ` +
        `${path.join(dir, "a-folder.db")} is a folder, not a database file\n`,
    );
    expect(folder.output).not.toContain("External error");
  });
});
