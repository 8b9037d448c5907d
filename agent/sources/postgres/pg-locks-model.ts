/**
 * From one pg_locks snapshot (pg-snapshot.ts) to the locks the dashboard shows: one lock per advisory key per
 * database, its holders and waiters, the level where it can be told, each waiter's blocking chain to its root, and
 * the hazards with their evidence. Pure: every time comes from the server's own clock (the snapshot's `now`), so the
 * agent's clock and the poll's latency never bend an age.
 */
import { createHash } from "node:crypto";
import type { DbHolding, DbSession, DbWaiting, Hazard, Lock, LockHolder, Waiter } from "../../../lib/contract/lock";
import { escapeText } from "../../core/escape";
import { lockId } from "../../core/lock-id";
import { STABLE_PART, type ObservedLock } from "../../core/tracker";
import { duration, type DbHazardThresholds } from "../db-lock-settings";
import { decodeAdvisoryKey, type PgLockRow, type PgSessionRow, type PgSnapshot } from "./pg-snapshot";

export interface PgModelContext {
  sourceId: string;
  agentId: string;
  showQueries: boolean;
  queryChars: number;
  thresholds: DbHazardThresholds;
  /** When this holding (holdingKey) was first seen, in server epoch ms, from earlier polls. */
  firstSeen: ReadonlyMap<string, number>;
  /** The agent's time of the observation (Lock.observedAt). */
  observedAtMs: number;
  /** Lock ids computed by earlier polls, by key (hashing 5,000 keys every second is measurable). */
  ids?: ReadonlyMap<string, string>;
  /** The previous poll's PgModel.memo: with the same rows, locks whose sessions and blocking are the same are reused. */
  memo?: PgModelMemo | null;
}

export interface PgModel {
  locks: ObservedLock[];
  /** firstSeen for the holdings present now (the ones gone are forgotten). */
  firstSeen: Map<string, number>;
  /** Per holder pid, the resources of every advisory lock it holds (a release's dry run lists them). */
  heldByPid: Map<number, string[]>;
  sessions: Map<number, PgSessionRow>;
  /** The lock ids of the keys present now, for the next poll's ctx.ids. */
  ids: Map<string, string>;
  /** For the next poll's ctx.memo. */
  memo: PgModelMemo;
}

/** A holder as its lock's owner: pid and backend start, exactly, so a reused pid is a different owner. */
export function pgOwner(pid: number, backendStart: string | null): string {
  return `pid ${pid}@${backendStart ?? "unknown"}`;
}

/** The inverse of pgOwner, for the release guard; null when the text is not a PostgreSQL owner. */
export function parsePgOwner(owner: string): { pid: number; backendStart: string } | null {
  const m = /^pid (\d{1,10})@(\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d(?::?\d\d)?))$/.exec(owner);
  return m ? { pid: Number(m[1]), backendStart: m[2]! } : null;
}

export function holdingKey(lockIdValue: string, owner: string): string {
  return `${lockIdValue}|${owner}`;
}

/** Server times repeat across the many locks of one session: parsed once each (a bounded memo). */
const parsed = new Map<string, number | null>();
const ms = (iso: string | null | undefined): number | null => {
  if (!iso) return null;
  let t = parsed.get(iso);
  if (t === undefined) {
    if (parsed.size > 20_000) parsed.clear();
    const v = Date.parse(iso);
    parsed.set(iso, (t = Number.isNaN(v) ? null : v));
  }
  return t;
};

function iso(t: string | null | undefined): string | null {
  const v = ms(t);
  return v === null ? null : new Date(v).toISOString();
}

function mode(raw: string): "exclusive" | "shared" {
  return raw === "ShareLock" ? "shared" : "exclusive";
}

function client(s: PgSessionRow): string | null {
  if (s.clientAddr === null) return s.clientPort === -1 ? "local" : null;
  return s.clientPort !== null && s.clientPort > 0 ? `${s.clientAddr}:${s.clientPort}` : s.clientAddr;
}

function session(pid: number, s: PgSessionRow | undefined, ctx: PgModelContext): DbSession {
  if (!s) return { pid, user: null, application: null, client: null, database: null, state: null };
  const out: DbSession = {
    pid,
    user: s.user === null ? null : escapeText(s.user, 64),
    application: s.application ? escapeText(s.application, 64) : null,
    client: client(s),
    database: s.db === null ? null : escapeText(s.db, 64),
    state: s.state,
    xactStart: iso(s.xactStart),
    queryStart: iso(s.queryStart),
    stateChange: iso(s.stateChange),
  };
  if (s.backendStart) out.backendStart = s.backendStart;
  if (ctx.showQueries) out.query = s.query === null ? null : escapeText(s.query, ctx.queryChars);
  return out;
}

/** Who names this session in a sentence: pid, application and client. */
function who(s: DbSession): string {
  const parts = [s.application ? `"${s.application}"` : null, s.user, s.client].filter(Boolean);
  return parts.length > 0 ? `pid ${s.pid} (${parts.join(", ")})` : `pid ${s.pid}`;
}

/**
 * From a waiting pid up to a root blocker, following the first blocker at each step (pg_blocking_pids lists the
 * holders first). Stops at a pid that waits for nobody, or at a cycle (a deadlock the server will break).
 */
export function blockingChain(pid: number, blockedBy: ReadonlyMap<number, readonly number[]>, maxDepth = 50): number[] {
  const chain = [pid];
  let cur = pid;
  while (chain.length < maxDepth) {
    const next = blockedBy.get(cur)?.[0];
    if (next === undefined || chain.includes(next)) break;
    chain.push(next);
    cur = next;
  }
  return chain;
}

/**
 * Session or transaction level. pg_locks does not record which function took an advisory lock, so this says only
 * what the evidence shows: no open transaction means it outlived one (session); held since before the current
 * transaction began means the same; the holder's last statement naming pg_advisory_xact_lock on this very key
 * suggests a transaction-level lock; anything else is unknown.
 */
export function holdingLevel(
  s: PgSessionRow | undefined,
  key: { kind: "bigint" | "int4-pair"; text: string },
  firstSeenServerMs: number,
): Pick<DbHolding, "level" | "levelEvidence"> {
  if (!s) return { level: "unknown", levelEvidence: "the holder's session is not visible in pg_stat_activity" };
  const xact = ms(s.xactStart);
  if (xact === null) {
    return {
      level: "session",
      levelEvidence: "the holder has no open transaction, so the lock outlived its transaction",
    };
  }
  if (firstSeenServerMs < xact) {
    return {
      level: "session",
      levelEvidence: `seen held at ${new Date(firstSeenServerMs).toISOString()}, before the holder's current transaction began (${new Date(xact).toISOString()})`,
    };
  }
  const args = key.text.split(",").map((n) => `\\s*'?${n.replace("-", "\\-")}'?(?:::\\w+)?\\s*`);
  const call = new RegExp(`advisory_xact_lock(?:_shared)?\\s*\\(${args.join(",")}\\)`, "i");
  if (s.query !== null && call.test(s.query)) {
    return {
      level: "transaction",
      levelEvidence:
        "inferred: the holder's current transaction's last statement called pg_advisory_xact_lock on this key",
    };
  }
  return {
    level: "unknown",
    levelEvidence:
      "the holder is inside a transaction that was already open when the lock was first seen; pg_locks does not say whether pg_advisory_lock or pg_advisory_xact_lock took it",
  };
}

interface KeyGroup {
  db: string | null;
  key: { kind: "bigint" | "int4-pair"; text: string };
  rows: PgLockRow[];
}

/** One holding of a lock as built: what its hazards need besides the time. */
interface BuiltHolding {
  sess: DbSession;
  s: PgSessionRow | undefined;
  level: DbHolding["level"];
  hk: string;
  seen: number;
}

/** One lock as built from its rows, without what time changes (hazards, observedAt): a later poll may reuse it. */
interface BuiltLock {
  /** The session row of each row's pid, in row order: the lock is reused only while every one is the same object. */
  deps: Array<PgSessionRow | undefined>;
  /** The blocking of its waiters (blockedBy and chain), as text: reused only while it is the same. */
  blocking: string;
  resource: string;
  holdings: BuiltHolding[];
  waiters: DbWaiting[];
  base: Omit<ObservedLock, "hazards" | "observedAt">;
  hazards: Hazard[];
}

/** One bucket's rows as the model grouped and built them. */
interface BucketMemo {
  rows: readonly PgLockRow[];
  groups: KeyGroup[];
  built: BuiltLock[];
}

/**
 * What one poll's model leaves for the next: per bucket, the lock rows it was built from and each lock as built. When
 * the next snapshot's bucket holds these very rows (the server did not send it: its signature was the same), a lock
 * whose sessions and blocking are also the same is not built again: only its hazards are, from the server's new time.
 * Every key's rows are in one bucket, so a bucket's groups are whole locks.
 */
export interface PgModelMemo {
  buckets: BucketMemo[];
}

function groupRows(rows: readonly PgLockRow[]): KeyGroup[] {
  const groups = new Map<string, KeyGroup>();
  for (const row of rows) {
    const key = decodeAdvisoryKey(row.classid, row.objid, row.objsubid);
    const gk = `${row.db ?? ""}\u0000${row.objsubid}\u0000${key.text}`;
    let g = groups.get(gk);
    if (!g) groups.set(gk, (g = { db: row.db, key, rows: [] }));
    g.rows.push(row);
  }
  return [...groups.values()];
}

function blockingText(g: KeyGroup, blockedBy: ReadonlyMap<number, readonly number[]>): string {
  let out = "";
  for (const r of g.rows) {
    if (!r.granted)
      out += `${r.pid}:${(blockedBy.get(r.pid) ?? []).join(",")}:${blockingChain(r.pid, blockedBy).join(",")};`;
  }
  return out;
}

function sameDeps(b: BuiltLock, g: KeyGroup, sessions: ReadonlyMap<number, PgSessionRow>): boolean {
  for (let i = 0; i < g.rows.length; i++) if (sessions.get(g.rows[i]!.pid) !== b.deps[i]) return false;
  return true;
}

function sameHazards(a: readonly Hazard[], b: readonly Hazard[]): boolean {
  return a.length === b.length && a.every((h, i) => h.code === b[i]!.code && h.message === b[i]!.message);
}

export function buildPgModel(snap: PgSnapshot, ctx: PgModelContext): PgModel {
  const now = ms(snap.now) ?? ctx.observedAtMs;
  const sessions = new Map(snap.sessions.map((s) => [s.pid, s]));
  const blockedBy = new Map(snap.blocking.map((b) => [b.pid, b.by ?? []]));
  const firstSeen = new Map<string, number>();
  const heldByPid = new Map<number, string[]>();
  const locks: ObservedLock[] = [];
  const observedAt = new Date(ctx.observedAtMs).toISOString();
  // A session holds many locks: its escaped view and its owner's fingerprint are made once per poll.
  const views = new Map<number, DbSession>();
  const sessionOf = (pid: number): DbSession => {
    let v = views.get(pid);
    if (!v) views.set(pid, (v = session(pid, sessions.get(pid), ctx)));
    return v;
  };
  const ids = new Map<string, string>();
  const dbNames = new Map<string | null, string>();
  const fingerprints = new Map<string, string>();
  const fingerprintOf = (owner: string): string => {
    let f = fingerprints.get(owner);
    if (!f) fingerprints.set(owner, (f = `sha1:${createHash("sha1").update(owner).digest("hex")}`));
    return f;
  };
  const memos: BucketMemo[] = [];
  for (const [bi, bucket] of snap.buckets.entries()) {
    const memo = ctx.memo?.buckets[bi]?.rows === bucket.rows ? ctx.memo.buckets[bi] : undefined;
    const groups = memo ? memo.groups : groupRows(bucket.rows);
    const built: BuiltLock[] = [];
    for (const [gi, g] of groups.entries()) {
      const blocking = blockingText(g, blockedBy);
      const prev = memo?.built[gi];
      let b: BuiltLock;
      if (prev && prev.blocking === blocking && sameDeps(prev, g, sessions)) {
        b = prev;
        ids.set(lockKey(g), b.base.id);
      } else {
        b = buildLock(g, blocking, { sessions, blockedBy, sessionOf, fingerprintOf, dbNames, ids, now, ctx });
      }
      for (const h of b.holdings) {
        firstSeen.set(h.hk, h.seen);
        const held = heldByPid.get(h.sess.pid);
        if (held) held.push(b.resource);
        else heldByPid.set(h.sess.pid, [b.resource]);
      }
      const hazards = lockHazards(b, now, ctx.thresholds);
      if (!sameHazards(hazards, b.hazards)) b = { ...b, hazards };
      built.push(b);
      locks.push({ ...b.base, hazards: b.hazards, observedAt, [STABLE_PART]: b.base } as ObservedLock);
    }
    memos.push({ rows: bucket.rows, groups, built });
  }
  return { locks, firstSeen, heldByPid, sessions, ids, memo: { buckets: memos } };
}

function lockKey(g: KeyGroup): string {
  return `${g.db ?? ""}\u0000${g.key.kind}\u0000${g.key.text}`;
}

/** Everything about one lock that its rows, sessions and blocking decide (not the time). */
function buildLock(
  g: KeyGroup,
  blocking: string,
  c: {
    sessions: ReadonlyMap<number, PgSessionRow>;
    blockedBy: ReadonlyMap<number, readonly number[]>;
    sessionOf: (pid: number) => DbSession;
    fingerprintOf: (owner: string) => string;
    dbNames: Map<string | null, string>;
    ids: Map<string, string>;
    now: number;
    ctx: PgModelContext;
  },
): BuiltLock {
  const { ctx } = c;
  let dbName = c.dbNames.get(g.db);
  if (dbName === undefined) c.dbNames.set(g.db, (dbName = g.db === null ? "(unknown database)" : escapeText(g.db, 64)));
  const resource = `${dbName}:${g.key.text}`;
  const raw = lockKey(g);
  const id = ctx.ids?.get(raw) ?? lockId("postgres", ctx.sourceId, raw);
  c.ids.set(raw, id);
  const holders: DbHolding[] = [];
  const holdings: BuiltHolding[] = [];
  const waiters: DbWaiting[] = [];
  for (const row of g.rows) {
    if (!row.granted) continue;
    const s = c.sessions.get(row.pid);
    const owner = pgOwner(row.pid, s?.backendStart ?? null);
    const hk = holdingKey(id, owner);
    const seen = ctx.firstSeen.get(hk) ?? c.now;
    const sess = c.sessionOf(row.pid);
    const level = holdingLevel(s, g.key, seen);
    holders.push({ session: sess, mode: mode(row.mode), ...level });
    holdings.push({ sess, s, level: level.level, hk, seen });
  }
  for (const row of g.rows) {
    if (row.granted) continue;
    const by = c.blockedBy.get(row.pid) ?? [];
    waiters.push({
      session: c.sessionOf(row.pid),
      mode: mode(row.mode),
      since: iso(row.waitstart),
      blockedBy: [...by],
      chain: blockingChain(row.pid, c.blockedBy),
    });
  }
  const owner = holders.length > 0 ? holders.map((h) => pgOwner(h.session.pid, h.session.backendStart ?? null)) : [];
  const first = holders[0];
  return {
    deps: g.rows.map((r) => c.sessions.get(r.pid)),
    blocking,
    resource,
    holdings,
    waiters,
    hazards: [],
    base: {
      id,
      backend: "postgres",
      source: ctx.sourceId,
      resource,
      owner: owner.length > 0 ? owner.join(" + ") : null,
      ...(owner.length > 0 ? { ownerFingerprint: c.fingerprintOf(owner.join(" + ")) } : {}),
      library: "postgres-advisory",
      rule: g.key.kind === "bigint" ? "pg_locks advisory, one bigint key" : "pg_locks advisory, two int4 keys",
      ttlMs: null,
      holder: first ? holderRecord(first, holders.length) : null,
      waiters: waiters.map(contractWaiter),
      kind: `advisory ${first?.mode ?? waiters[0]?.mode ?? "exclusive"}`,
      valuePreview: null,
      agentId: ctx.agentId,
      database: {
        engine: "postgres",
        database: g.db === null ? null : escapeText(g.db, 64),
        keyKind: g.key.kind,
        holders,
        waiters,
      },
    },
  };
}

/** What time changes: the hazards of one built lock at the server's time `now`. */
function lockHazards(b: BuiltLock, now: number, t: DbHazardThresholds): Hazard[] {
  const hazards: Hazard[] = [];
  let heldAtLeastMs = 0;
  let heldEvidence = () => "";
  for (const { sess, s, level, seen } of b.holdings) {
    // How long it has been held, at least: since the agent first saw it; and an idle session took it no later
    // than its last statement ended.
    const idleSince = s?.state === "idle" ? ms(s.stateChange) : null;
    const bySight = now - seen;
    const byIdle = idleSince === null ? 0 : now - idleSince;
    if (Math.max(bySight, byIdle) > heldAtLeastMs) {
      heldAtLeastMs = Math.max(bySight, byIdle);
      // Worded only if the hazard is raised: most locks are not held too long.
      heldEvidence = () =>
        byIdle > bySight
          ? `its holder ${who(sess)} has run nothing since ${new Date(idleSince!).toISOString()}`
          : `first seen held by ${who(sess)} at ${new Date(seen).toISOString()}`;
    }
    hazards.push(...holderHazards(sess, s, level, now, t));
  }
  let longWait: Array<{ w: DbWaiting; waited: number }> = [];
  for (const w of b.waiters) {
    const waited = w.since === null ? 0 : now - ms(w.since)!;
    if (waited >= t.longWaitMs) longWait.push({ w, waited });
  }
  longWait = longWait.sort((a, b) => b.waited - a.waited);
  if (longWait.length > 0) {
    const { w, waited } = longWait[0]!;
    const root = w.chain[w.chain.length - 1]!;
    hazards.push({
      code: "db-long-wait",
      severity: "warning",
      message: `${who(w.session)} has waited ${duration(waited)} for this lock (since ${w.since}; threshold ${duration(t.longWaitMs)})${
        w.blockedBy.length ? `, blocked by pid ${w.blockedBy.join(", ")}` : ""
      }${w.chain.length > 2 ? `; chain ${w.chain.join(" → ")}, root blocker pid ${root}` : ""}${
        longWait.length > 1 ? `; ${longWait.length - 1} more waiters past the threshold` : ""
      }.`,
    });
  }
  if (t.maxHoldMs > 0 && b.holdings.length > 0 && heldAtLeastMs > t.maxHoldMs) {
    hazards.push({
      code: "held-too-long",
      severity: "warning",
      message: `Held at least ${duration(heldAtLeastMs)} (${heldEvidence()}), past the limit of ${duration(t.maxHoldMs)}.`,
    });
  }
  return dedupe(hazards);
}

function holderHazards(
  sess: DbSession,
  s: PgSessionRow | undefined,
  level: DbHolding["level"],
  now: number,
  t: DbHazardThresholds,
): Hazard[] {
  const out: Hazard[] = [];
  const since = ms(s?.stateChange);
  if (!s || since === null) return out;
  const idleFor = now - since;
  if (s.state?.startsWith("idle in transaction") && idleFor >= t.idleInTransactionMs) {
    out.push({
      code: "db-idle-in-transaction",
      severity: "warning",
      message: `Holder ${who(sess)} has been ${s.state} for ${duration(idleFor)} (since ${new Date(since).toISOString()}; threshold ${duration(t.idleInTransactionMs)}): its transaction, and every lock it holds, lasts until it commits or rolls back.`,
    });
  }
  if (level === "session" && s.state === "idle" && idleFor >= t.idleHolderMs) {
    out.push({
      code: "db-leaked-lock",
      severity: "warning",
      message: `Session-level lock held by ${who(sess)}, which has run nothing for ${duration(idleFor)} (last statement ended ${new Date(since).toISOString()}; threshold ${duration(t.idleHolderMs)}): it may have forgotten to unlock. It stays until pg_advisory_unlock or the session ends.`,
    });
  }
  return out;
}

function dedupe(hazards: Hazard[]): Hazard[] {
  const seen = new Set<string>();
  return hazards.filter((h) => (seen.has(h.code) ? false : (seen.add(h.code), true)));
}

/** The holder in brief (the lock table's view); the full session, its times and the level's evidence are in Lock.database. */
function holderRecord(h: DbHolding, count: number): LockHolder {
  const s = h.session;
  const rec: LockHolder = { pid: s.pid, mode: h.mode, level: h.level };
  if (s.application) rec.application = s.application;
  if (s.user) rec.user = s.user;
  if (s.client) rec.client = s.client;
  if (s.state) rec.state = s.state;
  if (s.query) rec.query = s.query;
  if (count > 1) rec.holders = count;
  return rec;
}

function contractWaiter(w: DbWaiting): Waiter {
  const out: Waiter = { owner: `pid ${w.session.pid}` };
  if (w.since) out.since = w.since;
  const parts = [
    w.mode,
    w.session.application ? `"${w.session.application}"` : null,
    w.session.client,
    w.blockedBy.length ? `blocked by pid ${w.blockedBy.join(", ")}` : null,
    w.chain.length > 2 ? `chain ${w.chain.join(" → ")}` : null,
  ].filter(Boolean);
  out.detail = parts.join("; ");
  return out;
}

/** Lock ids of one snapshot that are held or awaited by this pid, for the release dry run. */
export function locksOfPid(locks: readonly Lock[], pid: number): Lock[] {
  return locks.filter((l) => l.database?.holders.some((h) => h.session.pid === pid));
}
