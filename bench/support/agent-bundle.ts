/**
 * The bench runs the agent as production does, `node dist/agent.mjs` (scripts/bundle.ts), so its memory and CPU are
 * the compiled agent's, without tsx's launcher process and in-process compiler. The bundle is rebuilt when it is
 * missing or older than any source file it was built from (the sources listed in its source map).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..", "..");
const bundle = path.join(root, "dist", "agent.mjs");

/** Why the bundle must be rebuilt, or null when it is current. */
export function bundleStaleness(): string | null {
  if (!existsSync(bundle) || !existsSync(`${bundle}.map`)) return "dist/agent.mjs is missing";
  const builtMs = statSync(bundle).mtimeMs;
  const map = JSON.parse(readFileSync(`${bundle}.map`, "utf8")) as { sources?: string[] };
  for (const src of map.sources ?? []) {
    const file = path.resolve(path.dirname(bundle), src);
    if (!existsSync(file)) return `${path.relative(root, file)} is gone`;
    if (statSync(file).mtimeMs > builtMs) return `${path.relative(root, file)} changed after the bundle was built`;
  }
  return null;
}

/** Bundles (about a second) when needed; returns what was done, for the run's log and notes. */
export function ensureAgentBundle(): string {
  const stale = bundleStaleness();
  if (stale === null) return "dist/agent.mjs was current";
  execFileSync(path.join(root, "node_modules", ".bin", "tsx"), ["scripts/bundle.ts"], { cwd: root, stdio: "pipe" });
  return `bundled at bench start (${stale})`;
}
