/**
 * Parsers for the ZooKeeper four-letter words the agent reads: who watches what (`wchc`, `wchp`) and which client
 * address each session is on (`cons`). Samples are real output of ZooKeeper 3.8.0 (Debian package), captured with
 * three contenders on /ParentLock and a fourth session watching.
 *
 * Known server behaviour that shapes what they can tell:
 * - `wchc`/`wchp` list only data and exists watches. Child watches (getChildren with a watch, the herd pattern)
 *   never appear, so "watches the parent's children" is always inferred.
 * - An exists watch on a node that does not exist is listed: the trace of a waiter stuck on a gone predecessor.
 * - `wchs`'s "Total watches" counts the same data watches only, while `mntr`'s zk_watch_count counts child watches
 *   too (seen on 3.8.0: two getChildren watches and one exists watch gave wchs 1, zk_watch_count 3). The difference
 *   is the number of child watches the listings hide; `cons` shows `lop=GETC` for a session whose last request
 *   was a getChildren (what a herd waiter does after every change).
 * - Each server reports only the sessions connected to it: an ensemble must be asked server by server.
 * - A command outside `4lw.commands.whitelist` answers one line: "wchc is not executed because it is not in the
 *   whitelist."; a server not yet serving answers "This ZooKeeper instance is not currently serving requests".
 */

import type { ClientWatchTable } from "./queue";

export type FourLetterWord = "wchc" | "wchp" | "cons" | "ruok" | "wchs" | "mntr";

export type FourLetterRefusal = "not-whitelisted" | "not-serving" | "empty" | "malformed";

export type FourLetterResult<T> =
  | { ok: true; value: T; /** lines that did not fit the format and were skipped */ skipped: number }
  | { ok: false; reason: FourLetterRefusal; message: string };

const SESSION = /^0x[0-9a-f]{1,16}$/;

/** A refusal or a non-answer, checked before parsing any command's output; null when it looks like an answer. */
export function fourLetterRefusal(
  cmd: FourLetterWord,
  text: string,
): { reason: FourLetterRefusal; message: string } | null {
  const first = text.split("\n", 1)[0]!.trim();
  if (first.includes("is not executed because it is not in the whitelist")) {
    return { reason: "not-whitelisted", message: `${cmd} is not in the server's 4lw.commands.whitelist` };
  }
  if (first.includes("not currently serving requests")) return { reason: "not-serving", message: first.slice(0, 200) };
  return null;
}

/** Drops a last line cut short by a size limit or a timeout: a half path must not become a watch. */
function completeLines(text: string, truncated: boolean): string[] {
  const lines = text.split("\n");
  if (truncated || !text.endsWith("\n")) lines.pop();
  return lines;
}

/**
 * `wchc`: sessions and the paths each watches (one session line, then its paths indented by a tab):
 *
 *   0x100000c19540002
 *   \t/ParentLock/Lock0000000001
 *   0x100000c19540003
 *   \t/ParentLock/Lock0000000000
 *   0x100000c19540001
 *   \t/ParentLock/Lock0000000000
 *   <empty line>
 *
 * With no watches at all the whole answer is "\n".
 */
export function parseWchc(text: string, truncated = false): FourLetterResult<Map<string, string[]>> {
  return parseWatchTable("wchc", text, truncated, {
    head: (line) => (SESSION.test(line.trim()) ? line.trim() : null),
    item: (rest) => (rest.startsWith("/") ? rest : null),
  });
}

/**
 * The shape wchc and wchp share: a head line (a session, or a path) and the tab-indented lines under it. Lines that
 * fit neither are counted as skipped; a table with no head at all but skipped lines is malformed.
 */
function parseWatchTable(
  cmd: FourLetterWord,
  text: string,
  truncated: boolean,
  parse: { head: (line: string) => string | null; item: (rest: string) => string | null },
): FourLetterResult<Map<string, string[]>> {
  const refused = fourLetterRefusal(cmd, text);
  if (refused) return { ok: false, ...refused };
  if (text === "") return { ok: false, reason: "empty", message: `${cmd}: no answer` };
  const out = new Map<string, string[]>();
  let current: string[] | null = null;
  let skipped = 0;
  for (const line of completeLines(text, truncated)) {
    if (line === "") continue;
    if (line.startsWith("\t")) {
      const item = parse.item(line.slice(1));
      if (current && item !== null) current.push(item);
      else skipped++;
      continue;
    }
    const head = parse.head(line);
    if (head !== null) {
      current = out.get(head) ?? [];
      out.set(head, current);
    } else {
      current = null;
      skipped++;
    }
  }
  if (out.size === 0 && skipped > 0)
    return { ok: false, reason: "malformed", message: `${cmd}: output not in the expected format` };
  return { ok: true, value: out, skipped };
}

/**
 * `wchp`: paths and the sessions watching each (the same table by path):
 *
 *   /ParentLock/Lock0000000000
 *   \t0x100000c19540003
 *   \t0x100000c19540001
 *   /ParentLock/Lock0000000001
 *   \t0x100000c19540002
 *   <empty line>
 */
export function parseWchp(text: string, truncated = false): FourLetterResult<Map<string, string[]>> {
  return parseWatchTable("wchp", text, truncated, {
    head: (line) => (line.startsWith("/") ? line : null),
    item: (rest) => (SESSION.test(rest.trim()) ? rest.trim() : null),
  });
}

export interface ConnectionInfo {
  /** Client address as the server sees it (IPv4, or IPv6 without brackets). */
  address: string;
  port: number;
  /** 0x-prefixed hex; absent for a connection that has not established a session (like the 4lw socket itself). */
  session?: string;
  /** Last operation (GETD, EXIS, PING, ...). */
  lastOp?: string;
  /** Negotiated session timeout in ms. */
  timeoutMs?: number;
  /** When the connection was established, epoch ms. */
  establishedMs?: number;
  queued?: number;
  received?: number;
  sent?: number;
}

/**
 * `cons`: one line per client connection, the 4lw connection itself included (it has no sid):
 *
 *    /127.0.0.1:56390[1](queued=0,recved=4,sent=4,sid=0x100000c19540000,lop=GETD,est=1795986464607,to=10000,lcxid=0x2,lzxid=0x8,lresp=800283,llat=0,minlat=0,avglat=3,maxlat=7)
 *    /127.0.0.1:56434[0](queued=0,recved=1,sent=0)
 *   <empty line>
 *
 * IPv6 clients appear as ` /0:0:0:0:0:0:0:1:56390[1](...)`: the port is what follows the last colon.
 */
export function parseCons(text: string, truncated = false): FourLetterResult<ConnectionInfo[]> {
  const refused = fourLetterRefusal("cons", text);
  if (refused) return { ok: false, ...refused };
  if (text === "") return { ok: false, reason: "empty", message: "cons: no answer" };
  const out: ConnectionInfo[] = [];
  let skipped = 0;
  for (const line of completeLines(text, truncated)) {
    if (line.trim() === "") continue;
    const m = /^\s*\/(.+):(\d{1,5})\[\d+\]\(([^)]*)\)\s*$/.exec(line);
    if (!m) {
      skipped++;
      continue;
    }
    const info: ConnectionInfo = { address: m[1]!, port: Number(m[2]) };
    for (const pair of m[3]!.split(",")) {
      const eq = pair.indexOf("=");
      if (eq <= 0) continue;
      const key = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const num = /^\d{1,15}$/.test(value) ? Number(value) : undefined;
      if (key === "sid" && SESSION.test(value)) info.session = value;
      else if (key === "lop" && /^[A-Z]{1,8}$/.test(value)) info.lastOp = value;
      else if (key === "to" && num !== undefined) info.timeoutMs = num;
      else if (key === "est" && num !== undefined) info.establishedMs = num;
      else if (key === "queued" && num !== undefined) info.queued = num;
      else if (key === "recved" && num !== undefined) info.received = num;
      else if (key === "sent" && num !== undefined) info.sent = num;
    }
    out.push(info);
  }
  if (out.length === 0 && skipped > 0)
    return { ok: false, reason: "malformed", message: "cons: output not in the expected format" };
  return { ok: true, value: out, skipped };
}

/**
 * `wchs`: a summary of the data watches on this server:
 *
 *   1 connections watching 1 paths
 *   Total watches:1
 */
export function parseWchs(text: string): FourLetterResult<{ connections: number; paths: number; total: number }> {
  const refused = fourLetterRefusal("wchs", text);
  if (refused) return { ok: false, ...refused };
  const head = /^(\d{1,12}) connections watching (\d{1,12}) paths\s*$/m.exec(text);
  const total = /^Total watches:\s*(\d{1,12})\s*$/m.exec(text);
  if (!head || !total) return { ok: false, reason: "malformed", message: "wchs: output not in the expected format" };
  return {
    ok: true,
    value: { connections: Number(head[1]), paths: Number(head[2]), total: Number(total[1]) },
    skipped: 0,
  };
}

/**
 * `mntr`: tab-separated key and value per line; only zk_watch_count is used (data and child watches together):
 *
 *   zk_version\t3.8.0-...
 *   zk_watch_count\t3
 */
export function parseMntrWatchCount(text: string): FourLetterResult<number> {
  const refused = fourLetterRefusal("mntr", text);
  if (refused) return { ok: false, ...refused };
  const m = /^zk_watch_count\t(\d{1,12})\s*$/m.exec(text);
  if (!m) return { ok: false, reason: "malformed", message: "mntr: no zk_watch_count" };
  return { ok: true, value: Number(m[1]), skipped: 0 };
}

/** Requests that say nothing about how a client waits: keep the one seen before them. */
const BACKGROUND_OPS = new Set(["PING", "SESS", "NA"]);

/**
 * Each live session's last meaningful request across successive cons reads: clients ping every third of their
 * session timeout, so a herd waiter's `lop=GETC` is overwritten by `PING` within seconds of each change. Pure.
 */
export function stickyLastOps(
  previous: ReadonlyMap<string, string>,
  current: ReadonlyMap<string, string>,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const [session, op] of current) {
    const before = previous.get(session);
    out.set(session, BACKGROUND_OPS.has(op) && before !== undefined ? before : op);
  }
  return out;
}

/** Turns `wchc`'s session -> paths into `wchp`'s path -> sessions, for servers that allow only the former. */
export function invertWchc(bySession: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [session, paths] of bySession) {
    for (const p of paths) {
      const list = out.get(p) ?? [];
      list.push(session);
      out.set(p, list);
    }
  }
  return out;
}

/** What one pass of four-letter words across the ensemble observed; merged from every server that answered. */
export interface WatchTable {
  /** path -> sessions with a data/exists watch on it (paths as the server sees them: chroot included). */
  byPath: Map<string, Set<string>>;
  /** session -> client address ("127.0.0.1:56390"). */
  hosts: Map<string, string>;
  /** Every server answered wchp: a missing entry means "no watch", not "unknown". */
  complete: boolean;
  /** Every server answered cons: a session absent from hosts is not connected anywhere. */
  sessionsComplete: boolean;
  /** session -> its last request as cons names it (GETC: getChildren, EXIS: exists, GETD: getData, ...). */
  lastOps: Map<string, string>;
  /**
   * Watches the server holds but wchc/wchp never list (child watches): mntr zk_watch_count less wchs's total,
   * summed over the servers; null unless every server answered both.
   */
  unlistedWatches: number | null;
  /** Why a server's table is missing, e.g. "127.0.0.1:2181: wchp is not in the server's 4lw.commands.whitelist". */
  problems: string[];
}

/** Merges per-server answers. Sessions connect to one server at a time, so tables add up without conflict. */
export function mergeWatchTables(
  perServer: ReadonlyArray<{
    server: string;
    wchp: FourLetterResult<Map<string, string[]>> | null;
    cons: FourLetterResult<ConnectionInfo[]> | null;
    wchs?: FourLetterResult<{ total: number }> | null;
    mntr?: FourLetterResult<number> | null;
  }>,
): WatchTable {
  const table: WatchTable = {
    byPath: new Map(),
    hosts: new Map(),
    complete: perServer.length > 0,
    sessionsComplete: perServer.length > 0,
    lastOps: new Map(),
    unlistedWatches: perServer.length > 0 ? 0 : null,
    problems: [],
  };
  for (const s of perServer) {
    if (s.wchs?.ok && s.mntr?.ok && table.unlistedWatches !== null) {
      // A watch added between the two answers can make the difference negative for a moment: never below zero.
      table.unlistedWatches += Math.max(0, s.mntr.value - s.wchs.value.total);
    } else table.unlistedWatches = null;
    if (s.wchp?.ok) {
      for (const [path, sessions] of s.wchp.value) {
        const set = table.byPath.get(path) ?? new Set<string>();
        for (const x of sessions) set.add(x);
        table.byPath.set(path, set);
      }
    } else {
      table.complete = false;
      table.problems.push(`${s.server}: ${s.wchp ? s.wchp.message : "wchp not read"}`);
    }
    if (s.cons?.ok) {
      for (const c of s.cons.value) {
        if (c.session)
          table.hosts.set(c.session, c.address.includes(":") ? `[${c.address}]:${c.port}` : `${c.address}:${c.port}`);
        if (c.session && c.lastOp) table.lastOps.set(c.session, c.lastOp);
      }
    } else {
      table.sessionsComplete = false;
      table.problems.push(`${s.server}: ${s.cons ? s.cons.message : "cons not read"}`);
    }
  }
  return table;
}

/**
 * The table as the agent's client sees paths: the server lists full paths, the client works below its chroot.
 * Watches outside the chroot are dropped (they cannot belong to a lock the agent reads).
 */
export function toClientWatchTable(table: WatchTable, chroot: string): ClientWatchTable {
  const byPath = new Map<string, Set<string>>();
  const bySession = new Map<string, Set<string>>();
  for (const [serverPath, sessions] of table.byPath) {
    let path = serverPath;
    if (chroot !== "") {
      if (serverPath === chroot) path = "/";
      else if (serverPath.startsWith(`${chroot}/`)) path = serverPath.slice(chroot.length);
      else continue;
    }
    byPath.set(path, sessions);
    for (const s of sessions) {
      const set = bySession.get(s) ?? new Set<string>();
      set.add(path);
      bySession.set(s, set);
    }
  }
  return {
    byPath,
    bySession,
    hosts: table.hosts,
    complete: table.complete,
    sessionsComplete: table.sessionsComplete,
    lastOps: table.lastOps,
    unlistedWatches: table.unlistedWatches,
  };
}
