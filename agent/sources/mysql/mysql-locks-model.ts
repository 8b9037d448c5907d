/**
 * MySQL/MariaDB user-level locks (GET_LOCK) from one poll's rows. Each row is a holder ("h") or a waiter ("w").
 *
 * MariaDB 10.11, information_schema.METADATA_LOCK_INFO (plugin metadata_lock_info) joined to PROCESSLIST, as read:
 *   { k: "h", id: 10, name_hex: "6A6F62277320226C6F636B22", user: "root", host: "127.0.0.1:57088", db: null,
 *     command: "Sleep", time_ms: 331.457, state: "", info: null }
 * A waiter is a PROCESSLIST row in state "User lock" (MariaDB does not list pending user locks in
 * METADATA_LOCK_INFO); the lock it waits for is read from its statement text:
 *   { k: "w", id: 11, name_hex: null, user: "root", host: "127.0.0.1:57096", db: null, command: "Query",
 *     time_ms: 322.462, state: "User lock", info: "SELECT GET_LOCK('job''s \"lock\"', 10)" }
 * MySQL 8, performance_schema.metadata_locks (OBJECT_TYPE 'USER LEVEL LOCK') joined to threads: the same shape, with
 * waiters as PENDING rows that name their lock (so no statement text is needed). MariaDB 10.11 started with
 * performance_schema=ON and the wait/lock/metadata/sql/mdl instrument lists GET_LOCK locks there too, as read
 * (tests/integration/mysql-locks.test.ts; MariaDB's performance_schema, not MySQL 8's):
 *   { k: "h", id: 5, name_hex: "616C7068612022…", user: "root", host: "localhost", db: null, command: "Query",
 *     time_ms: 2000, state: "User sleep", info: "select get_lock('alpha \"q', 0), connection_id(), sleep(8)" }
 * There the host has no port and the time is whole seconds (PROCESSLIST_TIME).
 *
 * What the server cannot give: the time a lock was taken (only how long its connection has been in its current
 * state), whether the holder is inside a transaction (GET_LOCK locks are session-level anyway), and a name's bytes
 * beyond what the information tables keep (64 characters, converted to UTF-8: other bytes become "?").
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { DbHolding, DbSession, DbWaiting, Hazard, LockHolder } from "../../../lib/contract/lock";
import { escapeBytes, escapeText } from "../../core/escape";
import { lockId } from "../../core/lock-id";
import type { ObservedLock } from "../../core/tracker";
import { duration, type DbHazardThresholds } from "../db-lock-settings";

const numeric = z.union([z.number(), z.string().regex(/^\d+(\.\d+)?$/)]).transform(Number);

const rowSchema = z.object({
  k: z.enum(["h", "w"]),
  id: numeric,
  name_hex: z
    .string()
    .regex(/^([0-9A-Fa-f]{2})*$/)
    .nullable(),
  user: z.string().nullable(),
  host: z.string().nullable(),
  db: z.string().nullable(),
  command: z.string().nullable(),
  time_ms: numeric.nullable(),
  state: z.string().nullable(),
  info: z.string().nullable(),
});

export type MysqlLockRow = z.output<typeof rowSchema>;
export type MysqlFlavour = "mariadb" | "mysql";
/**
 * Where the server lists user-level locks: MariaDB's information_schema.METADATA_LOCK_INFO (plugin), or
 * performance_schema.metadata_locks (MySQL 8; MariaDB too when started with performance_schema=ON and the
 * wait/lock/metadata/sql/mdl instrument enabled).
 */
export type MysqlLockTable = "metadata_lock_info" | "performance_schema";

export function parseMysqlRows(input: unknown): MysqlLockRow[] {
  const r = z.array(rowSchema).safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new Error(`unexpected user-lock row at ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
}

/** The width of the information tables' name column: a name this long may have been cut by the server. */
export const SERVER_NAME_CHARS = 64;

/**
 * The lock name of the first GET_LOCK('...') in a statement, as bytes: SQL single-quoted literal with '' and
 * backslash escapes. null when the statement does not name it literally (a prepared statement's `?`, a variable).
 */
export function getLockNameFromStatement(info: string | null): Buffer | null {
  if (!info) return null;
  const m = /\bGET_LOCK\s*\(\s*(?:_\w+\s*)?'((?:[^'\\]|\\.|'')*)'/i.exec(info);
  if (!m) return null;
  const unescaped = m[1]!.replace(/''/g, "'").replace(/\\(.)/g, (_all, c: string) => {
    const map: Record<string, string> = { n: "\n", t: "\t", r: "\r", "0": "\0", Z: "\x1a", b: "\b" };
    return map[c] ?? c;
  });
  return Buffer.from(unescaped, "utf8");
}

export interface MysqlModelContext {
  sourceId: string;
  agentId: string;
  flavour: MysqlFlavour;
  lockTable: MysqlLockTable;
  showQueries: boolean;
  queryChars: number;
  thresholds: DbHazardThresholds;
  observedAtMs: number;
  /** When each holding (lock id + owner) was first seen, agent epoch ms. */
  firstSeen: ReadonlyMap<string, number>;
}

export interface MysqlModel {
  locks: ObservedLock[];
  firstSeen: Map<string, number>;
  /** Raw name bytes per lock id, for the release guard (IS_USED_LOCK). */
  names: Map<string, Buffer>;
  /** Waiters whose lock could not be named from their statement. */
  unnamedWaiters: number;
  heldById: Map<number, string[]>;
}

/** A connection as its lock's owner. Connection ids only grow until the server restarts, so the id is exact. */
export function mysqlOwner(id: number, user: string | null, host: string | null): string {
  return `connection ${id} (${user ?? "?"}@${host ?? "?"})`;
}

export function parseMysqlOwner(owner: string): { id: number; user: string; host: string } | null {
  const m = /^connection (\d{1,20}) \((.*)@([^@]*)\)$/.exec(owner);
  return m ? { id: Number(m[1]), user: m[2]!, host: m[3]! } : null;
}

function session(r: MysqlLockRow, ctx: MysqlModelContext): DbSession {
  const s: DbSession = {
    pid: r.id,
    user: r.user === null ? null : escapeText(r.user, 64),
    application: null,
    client: r.host === null ? null : escapeText(r.host, 80),
    database: r.db === null ? null : escapeText(r.db, 64),
    state: [r.command, r.state].filter((x) => x).join(" / ") || null,
  };
  if (r.time_ms !== null) s.stateChange = new Date(ctx.observedAtMs - r.time_ms).toISOString();
  if (ctx.showQueries) s.query = r.info === null ? null : escapeText(r.info, ctx.queryChars);
  return s;
}

function who(r: MysqlLockRow): string {
  return `connection ${r.id} (${escapeText(r.user ?? "?", 64)}@${escapeText(r.host ?? "?", 80)})`;
}

export function buildMysqlModel(rows: readonly MysqlLockRow[], ctx: MysqlModelContext): MysqlModel {
  const groups = new Map<string, { name: Buffer; holders: MysqlLockRow[]; waiters: MysqlLockRow[] }>();
  let unnamedWaiters = 0;
  const group = (name: Buffer) => {
    const key = name.toString("hex");
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { name, holders: [], waiters: [] }));
    return g;
  };
  for (const r of rows) if (r.k === "h") group(Buffer.from(r.name_hex ?? "", "hex")).holders.push(r);
  for (const r of rows) {
    if (r.k !== "w") continue;
    let name = r.name_hex !== null ? Buffer.from(r.name_hex, "hex") : getLockNameFromStatement(r.info);
    if (name === null) {
      unnamedWaiters++;
      continue;
    }
    // The statement has the whole name, the lock table only its first 64 characters: wait on that holder.
    if (!groups.has(name.toString("hex"))) {
      const text = name.toString("utf8");
      const cut = [...groups.values()].find(
        (g) => [...g.name.toString("utf8")].length === SERVER_NAME_CHARS && text.startsWith(g.name.toString("utf8")),
      );
      if (cut) name = cut.name;
    }
    group(name).waiters.push(r);
  }
  const locks: ObservedLock[] = [];
  const firstSeen = new Map<string, number>();
  const names = new Map<string, Buffer>();
  const heldById = new Map<number, string[]>();
  const t = ctx.thresholds;
  for (const g of groups.values()) {
    const id = lockId("mysql", ctx.sourceId, g.name);
    names.set(id, g.name);
    const resource = escapeBytes(g.name, 200);
    const maybeCut = [...g.name.toString("utf8")].length >= SERVER_NAME_CHARS;
    const hazards: Hazard[] = [];
    const holders: DbHolding[] = g.holders.map((r) => ({
      session: session(r, ctx),
      mode: "exclusive",
      level: "session",
      levelEvidence: "GET_LOCK locks belong to the connection: a commit or rollback does not release them",
    }));
    const owner = g.holders.length > 0 ? g.holders.map((r) => mysqlOwner(r.id, r.user, r.host)).join(" + ") : null;
    for (const r of g.holders) {
      const hk = `${id}|${mysqlOwner(r.id, r.user, r.host)}`;
      const seen = ctx.firstSeen.get(hk) ?? ctx.observedAtMs;
      firstSeen.set(hk, seen);
      heldById.set(r.id, [...(heldById.get(r.id) ?? []), resource]);
      const idleMs = r.command === "Sleep" && r.time_ms !== null ? r.time_ms : 0;
      if (idleMs >= t.idleHolderMs) {
        hazards.push({
          code: "db-leaked-lock",
          severity: "warning",
          message: `Held by ${who(r)}, which has run nothing for ${duration(idleMs)} (command Sleep; threshold ${duration(t.idleHolderMs)}): it may have forgotten RELEASE_LOCK. The lock stays until it is released or the connection ends.`,
        });
      }
      const heldMs = Math.max(ctx.observedAtMs - seen, idleMs);
      if (t.maxHoldMs > 0 && heldMs > t.maxHoldMs) {
        hazards.push({
          code: "held-too-long",
          severity: "warning",
          message: `Held at least ${duration(heldMs)} (${idleMs > ctx.observedAtMs - seen ? `its connection has been idle that long` : `first seen at ${new Date(seen).toISOString()}`}), past the limit of ${duration(t.maxHoldMs)}.`,
        });
      }
    }
    const holderIds = g.holders.map((r) => r.id);
    const waiters: DbWaiting[] = g.waiters.map((r) => ({
      session: session(r, ctx),
      mode: "exclusive",
      since: r.time_ms === null ? null : new Date(ctx.observedAtMs - r.time_ms).toISOString(),
      blockedBy: holderIds,
      chain: [r.id, ...holderIds.slice(0, 1)],
    }));
    const longest = [...g.waiters].sort((a, b) => (b.time_ms ?? 0) - (a.time_ms ?? 0))[0];
    if (longest && (longest.time_ms ?? 0) >= t.longWaitMs) {
      hazards.push({
        code: "db-long-wait",
        severity: "warning",
        message: `${who(longest)} has waited ${duration(longest.time_ms!)} for this lock (threshold ${duration(t.longWaitMs)})${g.holders[0] ? `, held by ${who(g.holders[0])}` : ""}.`,
      });
    }
    const first = holders[0];
    const holder: LockHolder | null = first
      ? {
          connection: first.session.pid,
          ...(first.session.user ? { user: first.session.user } : {}),
          ...(first.session.client ? { host: first.session.client } : {}),
          ...(first.session.state ? { state: first.session.state } : {}),
          ...(first.session.stateChange ? { stateSince: first.session.stateChange } : {}),
          ...(first.session.query ? { query: first.session.query } : {}),
          level: "session",
        }
      : null;
    if (holder && maybeCut)
      holder.nameNote = `the server's lock table keeps ${SERVER_NAME_CHARS} characters: the name may be cut`;
    locks.push({
      id,
      backend: "mysql",
      source: ctx.sourceId,
      resource,
      owner,
      ...(owner ? { ownerFingerprint: `sha1:${createHash("sha1").update(owner).digest("hex")}` } : {}),
      library: ctx.flavour === "mariadb" ? "mariadb-get-lock" : "mysql-get-lock",
      rule:
        ctx.lockTable === "metadata_lock_info"
          ? "information_schema.METADATA_LOCK_INFO 'User lock'"
          : "performance_schema.metadata_locks USER LEVEL LOCK",
      ttlMs: null,
      holder,
      waiters: waiters.map((w) => ({
        owner: `connection ${w.session.pid}`,
        ...(w.since ? { since: w.since } : {}),
        detail: [
          w.session.user && w.session.client ? `${w.session.user}@${w.session.client}` : null,
          ctx.lockTable === "metadata_lock_info" ? "lock named by its GET_LOCK statement" : "PENDING in metadata_locks",
        ]
          .filter(Boolean)
          .join("; "),
      })),
      observedAt: new Date(ctx.observedAtMs).toISOString(),
      kind: "user lock",
      valuePreview: null,
      hazards,
      agentId: ctx.agentId,
      database: { engine: ctx.flavour, database: null, keyKind: "name", holders, waiters },
    });
  }
  return { locks, firstSeen, names, unnamedWaiters, heldById };
}
