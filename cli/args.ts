/**
 * The `lockscope` command line, parsed into a typed invocation: pure, so every wrong command line is a unit test.
 * A wrong command line is a UsageError (exit code 2) with one line that says what is wrong.
 */

export const BACKENDS = ["redis", "redlock", "zookeeper", "postgres", "mysql"] as const;
export const ALERT_STATES = ["open", "acknowledged", "resolved"] as const;
/** The dashboard's lock ids (lib/server/handlers/read-api.ts LOCK_ID). */
const LOCK_ID = /^[A-Za-z0-9_-]{1,128}$/;
export const DEFAULT_URL = "http://127.0.0.1:3000";

export type Command =
  | { name: "locks"; backend?: string; hazard?: string; query?: string }
  | { name: "lock"; id: string }
  | { name: "release"; id: string; owner: string; reason: string; dryRun: boolean; yes: boolean }
  | { name: "alerts"; state?: string }
  | { name: "events"; resource?: string; since?: string; limit?: number }
  | { name: "watch"; backend?: string; hazard?: string; query?: string }
  | { name: "help" };

export interface Invocation {
  command: Command;
  /** The dashboard's base URL, without a trailing slash. */
  url: string;
  token: string | null;
  json: boolean;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export const USAGE = `usage: lockscope <command> [flags]

commands:
  locks   [--backend B] [--hazard H] [--query Q]   the locks held now
  lock    <id>                                      one lock: holder, waiters, hazards, recent events
  release <id> --owner O --reason R [--dry-run] [--yes]
                                                    guarded force-release (asks to type the resource name unless --yes)
  alerts  [--state open|acknowledged|resolved]      alerts, open first
  events  [--resource R] [--since T] [--limit N]    stored history, newest first (T: ISO time, epoch ms, or 15m/2h/7d ago)
  watch   [--backend B] [--hazard H] [--query Q]   a live table, refreshed in place (Ctrl-C to stop)

flags:
  --url U     the dashboard (LOCKSCOPE_URL, default ${DEFAULT_URL})
  --token T   an API token (LOCKSCOPE_TOKEN); sent as Authorization: Bearer
  --json      print one JSON document instead of a table

exit codes: 0 ok, 1 refused or not found, 2 usage, 3 cannot reach the dashboard`;

/** Which flags each command takes; the value says whether the flag takes a value. */
const FLAGS: Record<Exclude<Command["name"], "help">, Record<string, boolean>> = {
  locks: { backend: true, hazard: true, query: true },
  lock: {},
  release: { owner: true, reason: true, "dry-run": false, yes: false },
  alerts: { state: true },
  events: { resource: true, since: true, limit: true },
  watch: { backend: true, hazard: true, query: true },
};
const GLOBAL_FLAGS: Record<string, boolean> = { url: true, token: true, json: false, help: false };

function oneOf(flag: string, value: string | undefined, allowed: readonly string[]): string | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value)) throw new UsageError(`--${flag} must be one of ${allowed.join(", ")} (got "${value}")`);
  return value;
}

/** A base URL the dashboard can be reached at: http or https, no credentials in it. */
export function parseBaseUrl(raw: string, from: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${from} is not a URL: "${raw.slice(0, 80)}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`${from} must be an http:// or https:// URL (got ${url.protocol})`);
  }
  if (url.username || url.password) throw new UsageError(`${from} must not carry credentials; use --token`);
  return url.toString().replace(/\/+$/, "");
}

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** --since: an ISO time, epoch milliseconds, or a duration back from now (15m, 2h, 7d); answered as ISO time. */
export function parseSince(raw: string, nowMs: number): string {
  const d = DURATION.exec(raw);
  if (d) return new Date(nowMs - Number(d[1]) * UNIT_MS[d[2]!]!).toISOString();
  const at = /^\d+$/.test(raw) ? new Date(Number(raw)) : new Date(raw);
  if (!/^\d/.test(raw) || Number.isNaN(at.getTime())) {
    throw new UsageError(`--since must be an ISO time, epoch milliseconds or a duration like 15m (got "${raw}")`);
  }
  return at.toISOString();
}

/**
 * Parses argv (without node and the script) with the environment's LOCKSCOPE_URL and LOCKSCOPE_TOKEN; flags win
 * over the environment. Throws UsageError.
 */
export function parseArgs(argv: readonly string[], env: Record<string, string | undefined>, nowMs: number): Invocation {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  let name: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h") {
      flags.set("help", true);
      continue;
    }
    if (!arg.startsWith("--") || arg === "--") {
      if (name === undefined) name = arg;
      else positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const known = name && name in FLAGS ? FLAGS[name as keyof typeof FLAGS] : {};
    const takesValue = GLOBAL_FLAGS[flag] ?? known[flag];
    if (takesValue === undefined) {
      const where = name && name in FLAGS ? ` for ${name}` : "";
      throw new UsageError(`unknown flag --${flag}${where}; see lockscope --help`);
    }
    if (flags.has(flag)) throw new UsageError(`--${flag} given twice`);
    if (!takesValue) {
      if (eq !== -1) throw new UsageError(`--${flag} takes no value`);
      flags.set(flag, true);
      continue;
    }
    const value = eq !== -1 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || (eq === -1 && value.startsWith("--"))) throw new UsageError(`--${flag} needs a value`);
    flags.set(flag, value);
  }
  const str = (f: string): string | undefined => {
    const v = flags.get(f);
    return typeof v === "string" ? v : undefined;
  };

  const rawUrl = str("url") ?? (env.LOCKSCOPE_URL?.trim() || undefined);
  const url = rawUrl ? parseBaseUrl(rawUrl, str("url") ? "--url" : "LOCKSCOPE_URL") : DEFAULT_URL;
  const token = str("token") ?? (env.LOCKSCOPE_TOKEN?.trim() || null);
  const json = flags.get("json") === true;
  const base = { url, token, json };

  if (flags.get("help") === true || name === "help") return { ...base, command: { name: "help" } };
  if (name === undefined) throw new UsageError("no command given; see lockscope --help");
  if (!(name in FLAGS)) throw new UsageError(`unknown command "${name}"; see lockscope --help`);
  const wantsId = name === "lock" || name === "release";
  const extra = wantsId ? positional.slice(1) : positional;
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" for ${name}`);

  const filters = () => ({
    backend: oneOf("backend", str("backend"), BACKENDS),
    hazard: str("hazard"),
    query: str("query"),
  });
  const drop = <T extends object>(o: T): T =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

  switch (name) {
    case "locks":
      return { ...base, command: drop({ name: "locks" as const, ...filters() }) };
    case "watch":
      if (json) throw new UsageError("watch draws a live table; --json is for the other commands");
      return { ...base, command: drop({ name: "watch" as const, ...filters() }) };
    case "alerts":
      return { ...base, command: drop({ name: "alerts" as const, state: oneOf("state", str("state"), ALERT_STATES) }) };
    case "events": {
      const rawLimit = str("limit");
      if (rawLimit !== undefined && (!/^\d+$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > 1000)) {
        throw new UsageError(`--limit must be a whole number from 1 to 1000 (got "${rawLimit}")`);
      }
      const since = str("since");
      return {
        ...base,
        command: drop({
          name: "events" as const,
          resource: str("resource"),
          since: since === undefined ? undefined : parseSince(since, nowMs),
          limit: rawLimit === undefined ? undefined : Number(rawLimit),
        }),
      };
    }
    default: {
      const id = positional[0];
      if (id === undefined) throw new UsageError(`${name} needs a lock id: lockscope ${name} <id>`);
      if (!LOCK_ID.test(id))
        throw new UsageError(`"${id.slice(0, 80)}" is not a lock id (A-Z a-z 0-9 _ -, see lockscope locks)`);
      if (name === "lock") return { ...base, command: { name: "lock", id } };
      const owner = str("owner");
      const reason = str("reason");
      if (owner === undefined || owner === "") {
        throw new UsageError("release needs --owner: the owner you saw, so a lock taken since is never freed");
      }
      if (reason === undefined || reason.trim().length < 3) {
        throw new UsageError("release needs --reason: why (at least 3 characters; it goes to the audit log)");
      }
      const dryRun = flags.get("dry-run") === true;
      const yes = flags.get("yes") === true;
      return { ...base, command: { name: "release", id, owner, reason, dryRun, yes } };
    }
  }
}
