/**
 * What the table shows of `Lock.source`: the address without its scheme, split so the port is never the part that
 * is cut (the host is truncated instead). Source ids as the agent writes them (agent/config.ts and the backends'
 * configs): `redis://host:6379/0` and `rediss://…` (a node or a Redis Cluster master), `postgresql://host:5432`,
 * `mysql://host:3306`, `zookeeper://h1:2181,h2:2181/chroot`, and a Redlock group's bare name (`orders`). Pure.
 */
export interface SourceLabel {
  /** Host (or the first host of a ZooKeeper ensemble, or a Redlock group's name): the part that may be cut. */
  host: string;
  /** `:6379`, or "" when the source has no port (a Redlock group). Never cut. */
  port: string;
  /** What follows the port: ` +2` more ensemble members, `/3` a non-zero Redis database, a ZooKeeper chroot. */
  rest: string;
  /** The whole source with its scheme (rediss:// says TLS) but never credentials, a query or a fragment: the hover text. */
  full: string;
}

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/** `[::1]:6379`, `::1:7001` (a cluster node's announced IPv6 address), `host:6379`, `host`. */
function splitHostPort(address: string): { host: string; port: string } {
  const bracketed = /^(\[[^\]]*\])(?::(\d+))?$/.exec(address);
  if (bracketed) return { host: bracketed[1]!, port: bracketed[2] ? `:${bracketed[2]}` : "" };
  const m = /^(.*):(\d+)$/.exec(address);
  if (m && m[1] !== "") return { host: m[1]!, port: `:${m[2]}` };
  return { host: address, port: "" };
}

export function sourceLabel(source: string): SourceLabel {
  const scheme = SCHEME.exec(source);
  if (!scheme) return { host: source, port: "", rest: "", full: source };
  const prefix = scheme[0].toLowerCase();
  let rest = source.slice(scheme[0].length);
  // Credentials never reach the screen, even if a source id ever carried them (`user:pass@host`).
  const at = rest.lastIndexOf("@", rest.search(/[/?#]|$/));
  if (at >= 0) rest = rest.slice(at + 1);
  rest = rest.replace(/[?#].*$/, "");
  const slash = rest.indexOf("/");
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const fullPath = slash >= 0 ? rest.slice(slash) : "";
  // Redis: database 0 is everyone's default, so only another database is worth the width.
  const path = /^rediss?:\/\/$/.test(prefix) && fullPath === "/0" ? "" : fullPath;
  const hosts = authority.split(",").filter((h) => h !== "");
  const first = splitHostPort(hosts[0] ?? "");
  const more = hosts.length > 1 ? ` +${hosts.length - 1}` : "";
  const full = hosts.length === 0 ? "" : `${prefix}${hosts.join(",")}${fullPath}`;
  return { host: first.host, port: first.port, rest: `${path}${more}`, full };
}
