/**
 * Redis Cluster's own words about itself, parsed: INFO cluster, CLUSTER NODES, and MOVED / ASK redirections.
 * Pure; the cluster source reads the text and decides with these. CLUSTER NODES rather than CLUSTER SHARDS:
 * it exists on every cluster-capable version (SHARDS needs 7.0) and says the same for our purpose.
 */
import { formatAddress } from "./replication-info";

export interface SlotRange {
  start: number;
  end: number;
}

export interface ClusterNode {
  /** The 40-hex node id, stable across restarts and address changes. */
  id: string;
  /** host:port clients use (IPv6 in brackets); null while the node has no known address (noaddr, handshake). */
  address: string | null;
  role: "master" | "replica";
  /** For a replica, the id of its master. */
  masterId: string | null;
  myself: boolean;
  /** Flagged `fail` by the majority. */
  failed: boolean;
  /** Flagged `fail?`: the answering node cannot reach it (not a failure by itself). */
  suspected: boolean;
  linkUp: boolean;
  configEpoch: number;
  /** Slots it serves; migrating/importing markers (`[5461->-id]`) are not ownership and are left out. */
  slots: SlotRange[];
}

/**
 * Sample of INFO cluster:
 *   # Cluster
 *   cluster_enabled:1
 */
export function parseClusterEnabled(info: string): boolean {
  return /^cluster_enabled:1\r?$/m.test(info);
}

const NODE_ID = /^[0-9a-f]{40}$/;

function parseSlots(tokens: readonly string[]): SlotRange[] | null {
  const out: SlotRange[] = [];
  for (const t of tokens) {
    if (t.startsWith("[")) continue;
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(t);
    if (!m) return null;
    const start = Number(m[1]);
    const end = m[2] === undefined ? start : Number(m[2]);
    if (start > end || end > 16383) return null;
    out.push({ start, end });
  }
  return out;
}

/** `127.0.0.1:30001@31001,hostname1` or `::1:30001@31001` or `:30001@31001` (address not known yet). */
function parseNodeAddress(text: string): string | null {
  const hostPort = text.split(",")[0]!.split("@")[0]!;
  const at = hostPort.lastIndexOf(":");
  if (at <= 0) return null;
  const host = hostPort.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const port = Number(hostPort.slice(at + 1));
  if (!/^[0-9A-Za-z_.:-]+$/.test(host) || !Number.isInteger(port) || port < 1 || port > 65535) return null;
  return formatAddress(host, port);
}

/**
 * Sample of CLUSTER NODES (redis-server 7.0.15; three masters, one replica; each line is
 * `id addr flags master ping-sent pong-recv config-epoch link-state slot...`):
 *   d9dada291ba9a2fbe4e94f65b22286006af15278 127.0.0.1:17312@27312 master - 0 1795987675910 2 connected 5461-10922
 *   f5d51308b819dee947445bc7585cee8cc66bf775 127.0.0.1:17311@27311 myself,master - 0 1795987675000 1 connected 0-5460
 *   f7e4bc4d8ba662c9ec35e4ec0bd7e55340750276 127.0.0.1:17314@27314 slave f5d51308b819dee947445bc7585cee8cc66bf775 0 1795987676011 1 connected
 *   c35d196dded38fe6793c8ccff10caf164c8327b4 127.0.0.1:17313@27313 master - 0 1795987676111 3 connected 10923-16383
 *
 * Lines that cannot be read are left out (a node we cannot name is a node we cannot watch).
 */
export function parseClusterNodes(text: string): ClusterNode[] {
  const out: ClusterNode[] = [];
  for (const raw of text.split("\n")) {
    const t = raw.trim().split(/\s+/);
    if (t.length < 8) continue;
    const [id, addr, flagText, master, , , epoch, link] = t as [string, ...string[]];
    if (!NODE_ID.test(id!)) continue;
    const flags = flagText!.split(",");
    const isMaster = flags.includes("master");
    const isReplica = flags.includes("slave") || flags.includes("replica");
    if (isMaster === isReplica) continue;
    const slots = parseSlots(t.slice(8));
    if (slots === null || !/^\d+$/.test(epoch!)) continue;
    if (isReplica && !NODE_ID.test(master!)) continue;
    out.push({
      id: id!,
      address: flags.includes("noaddr") ? null : parseNodeAddress(addr!),
      role: isMaster ? "master" : "replica",
      masterId: isReplica ? master! : null,
      myself: flags.includes("myself"),
      failed: flags.includes("fail"),
      suspected: flags.includes("fail?"),
      linkUp: link === "connected",
      configEpoch: Number(epoch),
      slots: isMaster ? slots : [],
    });
  }
  return out;
}

export function slotsContain(ranges: readonly SlotRange[], slot: number): boolean {
  return ranges.some((r) => slot >= r.start && slot <= r.end);
}

export function slotsOverlap(a: readonly SlotRange[], b: readonly SlotRange[]): boolean {
  return a.some((x) => b.some((y) => x.start <= y.end && y.start <= x.end));
}

export interface Redirect {
  /** MOVED: the slot is served elsewhere for good; ASK: the key moved with a slot migration in progress. */
  kind: "MOVED" | "ASK";
  slot: number;
  address: string;
}

/** `MOVED 3999 127.0.0.1:6381` / `ASK 3999 127.0.0.1:6381` (ioredis may prefix `ReplyError: `). */
export function parseRedirect(message: string): Redirect | null {
  const m = /^(?:ReplyError: )?(MOVED|ASK) (\d{1,5}) (\S+)$/.exec(message.trim());
  if (!m || Number(m[2]) > 16383) return null;
  return { kind: m[1] as "MOVED" | "ASK", slot: Number(m[2]), address: m[3]! };
}
