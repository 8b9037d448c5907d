/**
 * The only ZooKeeper operations the agent uses: reads, and one write (delete(path, version), for an operator's
 * force-release). The node-zookeeper-client implementation is in zk-client.ts; unit tests implement these with fakes.
 */
import type { FourLetterWord } from "./four-letter-words";
import type { ZkServerAddress } from "./zk-config";

/** The parts of a node's Stat the agent uses. */
export interface ZkStat {
  /** zxid that created the node, hex: tells a re-created node from the one seen before at the same path. */
  czxid: string;
  ctimeMs: number;
  /** Owning session, 0x-prefixed lowercase hex (as the server's four-letter words print it); "0x0" = persistent. */
  ephemeralOwner: string;
  /** Data version: delete(path, version) deletes only a node still at this version. */
  version: number;
  dataLength: number;
  numChildren: number;
}

/** How a conditional delete ended; any other failure (connection loss, no auth, timeout) rejects. */
export type ZkDeleteResult = "deleted" | "no-node" | "bad-version" | "not-empty";

export type ZkConnectionState = "connecting" | "connected" | "disconnected" | "expired" | "auth-failed" | "closed";

export interface ZkPortListener {
  /** Connection changes; `session` is the current session id when connected, else null. */
  onState(state: ZkConnectionState, session: string | null): void;
  /** A watch set by getChildren(watch) or exists(watch) fired for `path` (one-shot: re-arm by reading again). */
  onWatch(path: string): void;
}

export interface ZkPort {
  setListener(listener: ZkPortListener): void;
  state(): ZkConnectionState;
  session(): string | null;
  /** getChildren2: names and the parent's Stat; null when the node does not exist. */
  getChildren(path: string, watch: boolean): Promise<{ children: string[]; stat: ZkStat } | null>;
  /** Data (cut to maxBytes; stat.dataLength has the full length) and Stat; null when the node does not exist. */
  getData(path: string, maxBytes: number): Promise<{ data: Buffer | null; stat: ZkStat } | null>;
  /** Stat or null; with watch, also wakes on creation of a node that does not exist yet. */
  exists(path: string, watch: boolean): Promise<ZkStat | null>;
  /**
   * The one write: deletes `path` only while its data version is still `version` (never -1, "any version"). Used
   * only by a force-release an operator asked for.
   */
  delete(path: string, version: number): Promise<ZkDeleteResult>;
  close(): Promise<void>;
}

/** Plain-TCP four-letter words to one server; rejects when refused or timed out. */
export interface FourLetterWordPort {
  send(server: ZkServerAddress, cmd: FourLetterWord): Promise<{ text: string; truncated: boolean }>;
}
