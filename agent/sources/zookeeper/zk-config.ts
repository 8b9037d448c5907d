import { ConfigError, readInt, readList, readString, type Env } from "../../../lib/config/env";

export interface ZkServerAddress {
  host: string;
  port: number;
}

export interface ZookeeperConfig {
  /** The connection string handed to the client, as configured (servers and optional chroot). */
  connect: string;
  servers: ZkServerAddress[];
  /** "" when the connection string has none. Paths below are relative to it, as the applications see them. */
  chroot: string;
  /** What the dashboard shows as the source: `zookeeper://host:port,host:port/chroot` (never credentials). */
  sourceId: string;
  /** Lock parents (or roots to discover under); empty = discover from "/". */
  lockPaths: string[];
  /** Digest credentials for reading ACL-protected lock paths; null = anonymous. */
  auth: { user: string; password: string } | null;
  discoveryMaxDepth: number;
  discoveryMaxNodes: number;
  /** Full re-read of every lock parent (and rediscovery) at this interval, whatever the watches said. */
  resyncMs: number;
  /** A waiter queued longer than this is flagged. */
  longWaitMs: number;
  /** Per request (and per four-letter-word read) timeout. */
  requestTimeoutMs: number;
  /** Session timeout asked of the server for the agent's own session. */
  sessionTimeoutMs: number;
}

export const ZK_DEFAULT_PORT = 2181;

/**
 * The characters ZooKeeper itself refuses in a path (PathUtils.validatePath): NUL, C0/C1 controls, DEL, the
 * surrogate and private-use block and the specials. Checking here turns a typo into a start-up error, not a poll error.
 */
const FORBIDDEN_PATH_CHARS = /[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]/;

/** A problem with a ZooKeeper path, or null when ZooKeeper would accept it. */
export function zkPathProblem(path: string): string | null {
  if (!path.startsWith("/")) return "must start with /";
  if (path === "/") return null;
  if (path.endsWith("/")) return "must not end with /";
  if (FORBIDDEN_PATH_CHARS.test(path)) return "contains a character ZooKeeper does not allow";
  for (const seg of path.slice(1).split("/")) {
    if (seg === "") return "has an empty segment (//)";
    if (seg === "." || seg === "..") return "has a . or .. segment";
  }
  return null;
}

const HOST = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})$/;

/** Parses `host:port[,host:port...][/chroot]`; throws ConfigError naming `variable`. */
export function parseConnectString(variable: string, raw: string): { servers: ZkServerAddress[]; chroot: string } {
  const slash = raw.indexOf("/");
  const hostPart = slash === -1 ? raw : raw.slice(0, slash);
  let chroot = slash === -1 ? "" : raw.slice(slash);
  if (chroot === "/") chroot = "";
  if (chroot !== "") {
    const problem = zkPathProblem(chroot);
    if (problem) throw new ConfigError(variable, `chroot ${JSON.stringify(chroot.slice(0, 80))} ${problem}`);
  }
  const entries = hostPart.split(",").map((s) => s.trim());
  if (entries.length === 0 || entries.some((e) => e === "")) {
    throw new ConfigError(variable, `expected host:port[,host:port][/chroot], got ${JSON.stringify(raw.slice(0, 80))}`);
  }
  const servers = entries.map((entry) => {
    // node-zookeeper-client splits on ":", so bracketed IPv6 literals cannot work: say so instead of failing later.
    if (entry.includes("["))
      throw new ConfigError(variable, `IPv6 literals are not supported (${JSON.stringify(entry.slice(0, 60))})`);
    const parts = entry.split(":");
    if (parts.length > 2) throw new ConfigError(variable, `bad server ${JSON.stringify(entry.slice(0, 60))}`);
    const [host, portText] = parts as [string, string | undefined];
    if (!HOST.test(host)) throw new ConfigError(variable, `bad host ${JSON.stringify(host.slice(0, 60))}`);
    let port = ZK_DEFAULT_PORT;
    if (portText !== undefined) {
      if (!/^\d{1,5}$/.test(portText))
        throw new ConfigError(variable, `bad port ${JSON.stringify(portText.slice(0, 20))}`);
      port = Number(portText);
      if (port < 1 || port > 65535) throw new ConfigError(variable, `port must be between 1 and 65535, got ${port}`);
    }
    return { host, port };
  });
  return { servers, chroot };
}

/** `user:password` for the digest scheme; the password may itself contain ":". */
export function parseDigestAuth(variable: string, raw: string): { user: string; password: string } {
  const i = raw.indexOf(":");
  if (i <= 0 || i === raw.length - 1) throw new ConfigError(variable, "expected user:password");
  return { user: raw.slice(0, i), password: raw.slice(i + 1) };
}

/**
 * Reads the ZooKeeper part of the agent's configuration. Returns null when ZK_CONNECT is not set: ZooKeeper is
 * simply not watched. Every invalid value throws a ConfigError that names its variable.
 */
export function loadZookeeperConfig(env: Env = process.env): ZookeeperConfig | null {
  const connect = readString(env, "ZK_CONNECT", "");
  if (connect === "") return null;
  const { servers, chroot } = parseConnectString("ZK_CONNECT", connect);

  const lockPaths = readList(env, "ZK_LOCK_PATHS") ?? [];
  const seen = new Set<string>();
  for (const p of lockPaths) {
    const problem = zkPathProblem(p);
    if (problem) throw new ConfigError("ZK_LOCK_PATHS", `${JSON.stringify(p.slice(0, 80))} ${problem}`);
    if (seen.has(p)) throw new ConfigError("ZK_LOCK_PATHS", `${JSON.stringify(p.slice(0, 80))} is listed twice`);
    seen.add(p);
  }

  const authRaw = env.ZK_AUTH;
  const auth = authRaw === undefined || authRaw === "" ? null : parseDigestAuth("ZK_AUTH", authRaw);

  const sourceId = `zookeeper://${servers.map((s) => `${s.host}:${s.port}`).join(",")}${chroot}`;
  return {
    connect: `${servers.map((s) => `${s.host}:${s.port}`).join(",")}${chroot}`,
    servers,
    chroot,
    sourceId,
    lockPaths,
    auth,
    discoveryMaxDepth: readInt(env, "ZK_DISCOVERY_MAX_DEPTH", 4, 1, 64),
    discoveryMaxNodes: readInt(env, "ZK_DISCOVERY_MAX_NODES", 5000, 1, 10_000_000),
    resyncMs: readInt(env, "ZK_RESYNC_MS", 30_000, 1000, 86_400_000),
    longWaitMs: readInt(env, "ZK_LONG_WAIT_MS", 60_000, 1, 86_400_000),
    requestTimeoutMs: readInt(env, "ZK_REQUEST_TIMEOUT_MS", 5000, 100, 600_000),
    sessionTimeoutMs: readInt(env, "ZK_SESSION_TIMEOUT_MS", 15_000, 2000, 600_000),
  };
}
