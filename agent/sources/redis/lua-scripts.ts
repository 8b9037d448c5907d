import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const dir = path.join(path.dirname(new URL(import.meta.url).pathname), "lua");

/** A Lua script from lua/<name>-<numKeys>.lua (bullmq's convention), ready for ioredis defineCommand. */
export function loadLua(name: string): { lua: string; numberOfKeys: number } {
  const file = readdirSync(dir).find((f) => new RegExp(`^${name}-\\d+\\.lua$`).test(f));
  if (!file) throw new Error(`no Lua script ${name}-<numKeys>.lua in ${dir}`);
  return { lua: readFileSync(path.join(dir, file), "utf8"), numberOfKeys: Number(/-(\d+)\.lua$/.exec(file)![1]) };
}
