#!/usr/bin/env node
// The package's `lockscope` bin (`npx lockscope` in a checkout). It runs the compiled dist/lockscope.mjs that
// `npm run build` writes, which starts in a fraction of the time; before a build, or when cli/ changed since, it
// runs the TypeScript source through tsx (a dependency), so the command works right after `npm ci` as well.
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const root = path.resolve(import.meta.dirname, "..");
const compiled = path.join(root, "dist", "lockscope.mjs");
const cliDir = path.join(root, "cli");

function compiledIsCurrent() {
  if (!existsSync(compiled)) return false;
  const built = statSync(compiled).mtimeMs;
  return readdirSync(cliDir).every((f) => statSync(path.join(cliDir, f)).mtimeMs <= built);
}

if (compiledIsCurrent()) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(path.join(cliDir, "lockscope.ts")).href);
}
