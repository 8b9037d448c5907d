/**
 * Small, strict readers for environment variables. Bad configuration stops the process at start with one line that
 * names the variable and what is wrong (ConfigError), never with a stack trace halfway through a poll.
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    readonly problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = "ConfigError";
  }
}

export type Env = Record<string, string | undefined>;

function raw(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined ? undefined : v.trim();
}

export function readString(env: Env, name: string, fallback: string): string {
  const v = raw(env, name);
  return v === undefined || v === "" ? fallback : v;
}

export function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = raw(env, name);
  if (v === undefined || v === "") return fallback;
  if (!/^-?\d+$/.test(v)) throw new ConfigError(name, `expected a whole number, got ${JSON.stringify(v.slice(0, 40))}`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** Comma-separated list; blank entries are dropped. Undefined when the variable is not set at all. */
export function readList(env: Env, name: string): string[] | undefined {
  const v = raw(env, name);
  if (v === undefined) return undefined;
  return v
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

export function readBool(env: Env, name: string, fallback: boolean): boolean {
  const v = raw(env, name)?.toLowerCase();
  if (v === undefined || v === "") return fallback;
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new ConfigError(name, `expected true or false, got ${JSON.stringify(v.slice(0, 20))}`);
}

export function readEnum<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const v = raw(env, name);
  if (v === undefined || v === "") return fallback;
  if ((allowed as readonly string[]).includes(v)) return v as T;
  throw new ConfigError(name, `expected one of ${allowed.join(", ")}, got ${JSON.stringify(v.slice(0, 20))}`);
}

export function readHttpUrl(env: Env, name: string, fallback: string): string {
  const v = readString(env, name, fallback);
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ConfigError(name, `not a URL: ${JSON.stringify(v.slice(0, 80))}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(name, `expected an http:// or https:// URL, got ${url.protocol}`);
  }
  return url.toString().replace(/\/$/, "");
}

/** Prints the one-line error and exits when `fn` throws a ConfigError; rethrows anything else. */
export function loadOrExit<T>(processName: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${processName}: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}
