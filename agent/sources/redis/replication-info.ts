/**
 * INFO replication, parsed. Pure: the replication watcher reads the text, this decides what it says.
 */

/** One replica as its master lists it. */
export interface ReplicaLink {
  /** host:port as announced (IPv6 hosts in brackets), the key for REDIS_ADDRESS_MAP. */
  address: string;
  host: string;
  port: number;
  /** online, wait_bgsave, send_bulk, ...: only "online" replicas stream writes as they happen. */
  state: string;
  /** Replication offset the replica acknowledged; undefined when the line did not say. */
  offset: number | undefined;
  /** Seconds since the replica's last acknowledgement. */
  lagSeconds: number | undefined;
}

export type ReplicationInfo =
  | {
      role: "master";
      /** master_repl_offset: bytes of the replication stream produced so far. */
      offset: number | undefined;
      replicas: ReplicaLink[];
    }
  | {
      role: "replica";
      /** slave_repl_offset: how far this replica has applied its master's stream. */
      offset: number | undefined;
      masterAddress: string | null;
      linkUp: boolean;
    };

/** host:port, with an IPv6 host in brackets so the last colon always separates the port. */
export function formatAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function fields(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\r$/, "");
    if (line === "" || line.startsWith("#")) continue;
    const at = line.indexOf(":");
    if (at <= 0) continue;
    out.set(line.slice(0, at), line.slice(at + 1));
  }
  return out;
}

function int(v: string | undefined): number | undefined {
  return v !== undefined && /^-?\d{1,18}$/.test(v) ? Number(v) : undefined;
}

function port(v: string | undefined): number | undefined {
  const n = int(v);
  return n !== undefined && n > 0 && n < 65536 ? n : undefined;
}

/** `ip=127.0.0.1,port=6380,state=online,offset=14,lag=0` (an IPv6 ip has colons but never commas). */
export function parseReplicaLine(value: string): ReplicaLink | null {
  const kv = new Map<string, string>();
  for (const part of value.split(",")) {
    const at = part.indexOf("=");
    if (at > 0) kv.set(part.slice(0, at), part.slice(at + 1));
  }
  const host = kv.get("ip");
  const p = port(kv.get("port"));
  if (!host || p === undefined || /[\s/@]/.test(host)) return null;
  return {
    address: formatAddress(host, p),
    host,
    port: p,
    state: kv.get("state") ?? "unknown",
    offset: int(kv.get("offset")),
    lagSeconds: int(kv.get("lag")),
  };
}

/**
 * Sample of INFO replication on a master with one replica (redis-server 7.0.15):
 *   # Replication
 *   role:master
 *   connected_slaves:1
 *   slave0:ip=127.0.0.1,port=17302,state=online,offset=55,lag=0
 *   master_failover_state:no-failover
 *   master_replid:42bd07066f75b9eabbb642030a0ed7476100fad8
 *   master_replid2:0000000000000000000000000000000000000000
 *   master_repl_offset:55
 *   second_repl_offset:-1
 *   repl_backlog_active:1
 *
 * and on that replica:
 *   # Replication
 *   role:slave
 *   master_host:127.0.0.1
 *   master_port:17301
 *   master_link_status:up
 *   master_last_io_seconds_ago:3
 *   master_sync_in_progress:0
 *   slave_read_repl_offset:55
 *   slave_repl_offset:55
 *   slave_priority:100
 *   slave_read_only:1
 *   connected_slaves:0
 *   master_repl_offset:55
 *
 * Null when the text has no role line this parser knows (not INFO replication, or a Sentinel). Replica lines that
 * cannot be read are left out rather than guessed.
 */
export function parseReplicationInfo(text: string): ReplicationInfo | null {
  const f = fields(text);
  const role = f.get("role");
  if (role === "master") {
    const replicas: ReplicaLink[] = [];
    for (const [k, v] of f) {
      if (!/^slave\d+$/.test(k)) continue;
      const link = parseReplicaLine(v);
      if (link) replicas.push(link);
    }
    return { role: "master", offset: int(f.get("master_repl_offset")), replicas };
  }
  if (role === "slave" || role === "replica") {
    const host = f.get("master_host");
    const p = port(f.get("master_port"));
    return {
      role: "replica",
      offset: int(f.get("slave_repl_offset")),
      masterAddress: host && p !== undefined ? formatAddress(host, p) : null,
      linkUp: f.get("master_link_status") === "up",
    };
  }
  return null;
}
