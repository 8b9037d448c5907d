/**
 * The second half of `npm run build` (after `next build`): compiles the dashboard server, the agent, the `npm start`
 * launcher, the `lockscope` command line and the quick start's demo workload into dist/*.mjs with esbuild, so that a deployment runs plain `node`:
 * no TypeScript compile at every start and no tsx launcher process per service.
 *
 * Every npm package stays external (`packages: "external"`): the bundles run inside the checkout, next to
 * node_modules, so better-sqlite3's native module, next's server and Prisma's runtime load exactly as under tsx.
 * Our own code, the generated Prisma client (lib/generated/prisma, TypeScript) included, is bundled.
 */
import { build } from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const out = path.join(root, "dist");

/** dist/<name>.mjs <- entry */
export const ENTRIES: Record<string, string> = {
  dashboard: "lib/server/main.ts",
  agent: "agent/main.ts",
  start: "scripts/start.ts",
  lockscope: "cli/lockscope.ts",
  "demo-workload": "scripts/demo-workload.ts",
};

async function main(): Promise<void> {
  const started = performance.now();
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, path.join(root, file)])),
    outdir: out,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    sourcemap: "linked",
    logLevel: "warning",
  });
  // The agent reads its Lua scripts at start from lua/ next to the module that loads them (lua-scripts.ts).
  cpSync(path.join(root, "agent", "sources", "redis", "lua"), path.join(out, "lua"), { recursive: true });
  const ms = Math.round(performance.now() - started);
  process.stdout.write(`lockscope: bundled ${Object.keys(ENTRIES).join(", ")} into dist/ in ${ms} ms\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`lockscope bundle: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
