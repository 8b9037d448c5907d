/**
 * ZooKeeper lock hazards, decided from one observation of a lock (plus how long a waiter has looked stuck, which
 * the source measures across observations). Pure: no I/O, no clock.
 */
import type { Hazard } from "../../../lib/contract/lock";
import { escapeText } from "../../core/escape";
import type { ClientWatchTable, Contender, LockShape } from "./queue";

export interface HazardThresholds {
  /** A waiter queued longer than this is a long wait. */
  longWaitMs: number;
  /** This many sessions waiting on one node (or one directory's children) make a herd. */
  herdMinWatchers: number;
  /** A waiter must look stuck this long before it is reported: a watch is re-armed a moment after it fires. */
  stuckGraceMs: number;
  /** Empty lock parents in one directory from this many on. */
  emptyParentsMin: number;
}

export const DEFAULT_THRESHOLDS: HazardThresholds = {
  longWaitMs: 60_000,
  herdMinWatchers: 5,
  stuckGraceMs: 2000,
  emptyParentsMin: 100,
};

const NAMES_SHOWN = 3;

function names(list: readonly Contender[]): string {
  const shown = list.slice(0, NAMES_SHOWN).map((c) => escapeText(c.name, 80));
  return list.length > NAMES_SHOWN ? `${shown.join(", ")} and ${list.length - NAMES_SHOWN} more` : shown.join(", ");
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function duration(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/**
 * Waiters that cannot wake up, on behavioural evidence from the server's own watch table (only when every server
 * answered): the waiter's session is alive (listed by cons, when cons was read) and still watches a node of this
 * lock that no longer exists: its predecessor went away and it did not move on (an exists watch on a gone node stays
 * armed forever, and nothing else will wake it). The source reports it only once that lasted a bound.
 * A waiter with no visible watch is NOT a candidate: wchc/wchp never list child watches, so a waiter that watches
 * the parent's children (the herd) looks exactly like that. See unseenWatchers. Returns contender path -> reason.
 */
export function stuckCandidates(shape: LockShape, table: ClientWatchTable | null): Map<string, string> {
  const out = new Map<string, string>();
  if (!table?.complete) return out;
  const existing = new Set(shape.contenders.map((c) => c.path));
  const dirs = new Set(shape.contenders.map((c) => dirname(c.path)));
  for (const c of shape.contenders) {
    if (c.role !== "waiter" || c.waitsOnChildren || !c.waitsForPath) continue;
    if (table.sessionsComplete && !table.hosts.has(c.session)) continue; // a dead session: not a stuck waiter
    const watched = [...(table.bySession.get(c.session) ?? [])].filter((p) => dirs.has(dirname(p)));
    if (watched.includes(c.waitsForPath)) continue;
    const gone = watched.find((p) => !existing.has(p));
    if (gone !== undefined) {
      out.set(
        c.path,
        `still watches ${gone.slice(gone.lastIndexOf("/") + 1)}, which no longer exists, instead of ${c.waitsFor}`,
      );
    }
  }
  return out;
}

/** cons names getChildren (and getChildren2) GETC: a waiter re-listing the parent. */
const LIST_OPS = new Set(["GETC", "GCH2", "LIST"]);

/**
 * Waiters whose recipe waits on a predecessor but whose session shows no data watch in this lock (only when every
 * server answered): what is known, not a failure. `relisting` are those whose last request was a getChildren
 * (cons `lop=GETC`): seen behaving like a herd (children watch on the parent, re-listed after each change).
 */
export function unseenWatchers(
  shape: LockShape,
  table: ClientWatchTable | null,
): { unseen: Contender[]; relisting: Contender[] } {
  const unseen: Contender[] = [];
  const relisting: Contender[] = [];
  if (!table?.complete) return { unseen, relisting };
  const dirs = new Set(shape.contenders.map((c) => dirname(c.path)));
  for (const c of shape.contenders) {
    if (c.role !== "waiter" || c.waitsOnChildren || !c.waitsForPath) continue;
    const watched = [...(table.bySession.get(c.session) ?? [])].filter((p) => dirs.has(dirname(p)));
    if (watched.length > 0) continue;
    const op = table.lastOps?.get(c.session);
    if (op !== undefined && LIST_OPS.has(op)) relisting.push(c);
    else unseen.push(c);
  }
  return { unseen, relisting };
}

export interface HazardInput {
  shape: LockShape;
  table: ClientWatchTable | null;
  nowMs: number;
  thresholds?: HazardThresholds;
  /** contender path -> how long it has been a stuck candidate, with the reason (from stuckCandidates). */
  stuck?: ReadonlyMap<string, { forMs: number; reason: string }>;
  /** Empty lock parents in this lock's directory, when there are many (see emptyParentsHazard). */
  emptySiblings?: number;
}

export function zkHazards(input: HazardInput): Hazard[] {
  const { shape, table, nowMs } = input;
  const t = input.thresholds ?? DEFAULT_THRESHOLDS;
  const hazards: Hazard[] = [];
  const waiters = shape.contenders.filter((c) => c.role === "waiter");
  const holders = shape.contenders.filter((c) => c.role === "holder");

  const persistent = shape.contenders.filter((c) => !c.ephemeral);
  if (persistent.length > 0) {
    const holding = persistent.some((c) => c.role === "holder");
    hazards.push({
      code: "persistent-contender",
      severity: "critical",
      message:
        `${names(persistent)} ${persistent.length === 1 ? "is a PERSISTENT node" : "are PERSISTENT nodes"} (no session owns ` +
        `${persistent.length === 1 ? "it" : "them"}): ${holding ? "the lock stays held" : "the queue stays blocked"} after the client is gone, until someone deletes ${persistent.length === 1 ? "it" : "them"}.`,
    });
  }

  const stuck = waiters.filter((c) => {
    const s = input.stuck?.get(c.path);
    return s !== undefined && s.forMs >= t.stuckGraceMs;
  });
  if (stuck.length > 0) {
    const first = input.stuck!.get(stuck[0]!.path)!;
    hazards.push({
      code: "stuck-waiter",
      severity: "critical",
      // No elapsed time in the text: it is part of the lock's fingerprint and would re-send the lock every poll.
      message: `${names(stuck)} cannot move up: ${escapeText(stuck[0]!.name, 80)} ${first.reason} (observed in the server's watch table).`,
    });
  }

  const herd = herdHazard(shape, table, t.herdMinWatchers);
  if (herd) hazards.push(herd);
  else {
    const seenHerd = relistingHerdHazard(shape, table, t.herdMinWatchers);
    if (seenHerd) hazards.push(seenHerd);
  }

  const longWaiters = waiters.filter((c) => nowMs - c.ctimeMs > t.longWaitMs);
  if (longWaiters.length > 0) {
    const oldest = longWaiters.reduce((a, b) => (b.ctimeMs < a.ctimeMs ? b : a));
    hazards.push({
      code: "long-wait",
      severity: "warning",
      message: `${longWaiters.length} waiter${longWaiters.length === 1 ? "" : "s"} queued longer than ${duration(t.longWaitMs)}; the oldest, ${escapeText(oldest.name, 80)}, since ${new Date(oldest.ctimeMs).toISOString()}.`,
    });
  }

  if (table?.sessionsComplete) {
    const gone = holders.filter((h) => h.ephemeral && !table.hosts.has(h.session));
    if (gone.length > 0) {
      hazards.push({
        code: "holder-session-disconnected",
        severity: "warning",
        message: `The holder's session ${gone[0]!.session} is not connected to any server: its client died or is cut off, and the lock is freed only when the session expires.`,
      });
    }
  }

  const sequences = shape.contenders.map((c) => c.sequence).filter((s): s is number => s !== null);
  if (sequences.some((s) => s < 0) && sequences.some((s) => s >= 0)) {
    hazards.push({
      code: "sequence-wrapped",
      severity: "warning",
      message:
        "The parent's sequence counter overflowed: negative and positive suffixes coexist, and clients that sort names as text disagree with those that sort numbers on who holds.",
    });
  }

  if (shape.kind === "queue" && shape.recipes.length > 1) {
    hazards.push({
      code: "mixed-recipes",
      severity: "warning",
      message: `Contenders of different recipes share this parent (${shape.recipes.join(", ")}): each library orders and waits by its own rules.`,
    });
  }

  if (shape.maxLeases !== null && holders.length > shape.maxLeases) {
    hazards.push({
      code: "over-capacity",
      severity: "critical",
      message: `${holders.length} holders for ${shape.maxLeases} lease${shape.maxLeases === 1 ? "" : "s"}.`,
    });
  }

  if (input.emptySiblings !== undefined && input.emptySiblings >= t.emptyParentsMin) {
    const h = emptyParentsHazard(dirname(shape.path), input.emptySiblings, t.emptyParentsMin);
    if (h) hazards.push(h);
  }
  return hazards;
}

/**
 * Many sessions woken by one change. Observed: one node of this lock (or the lock path itself) watched by at least
 * `min` sessions, unless they are all readers waiting for the same writer (they all proceed together, by design).
 * Inferred: recipes whose waiters all watch the parent's children (child watches are never listed, so always).
 */
export function herdHazard(shape: LockShape, table: ClientWatchTable | null, min: number): Hazard | null {
  const onChildren = new Map<string, number>();
  for (const c of shape.contenders) {
    if (c.role === "waiter" && c.waitsOnChildren && c.waitsForPath)
      onChildren.set(c.waitsForPath, (onChildren.get(c.waitsForPath) ?? 0) + 1);
  }
  for (const [dir, n] of onChildren) {
    // Semaphores have one acquirer at a time on their holders' children, so they never reach the threshold.
    if (n >= min) {
      return {
        code: "herd",
        severity: "warning",
        message: `${n} waiters watch the children of ${escapeText(dir, 200)}: every release wakes them all to re-list the queue (inferred from the recipe).`,
      };
    }
  }
  if (!table?.complete) return null;
  const readers = new Set(shape.contenders.filter((c) => c.mode === "read").map((c) => c.session));
  for (const path of [shape.path, ...shape.contenders.map((c) => c.path)]) {
    const sessions = table.byPath.get(path);
    if (!sessions || sessions.size < min) continue;
    if ([...sessions].every((s) => readers.has(s))) continue;
    return {
      code: "herd",
      severity: "warning",
      message: `${sessions.size} sessions watch ${escapeText(path.slice(path.lastIndexOf("/") + 1) || path, 200)}: its deletion wakes them all at once (observed).`,
    };
  }
  return null;
}

/**
 * What the watch listings can and cannot say about waiters with no visible data watch. Severity follows the
 * evidence: waiters seen re-listing the parent are a herd (a warning from `min` of them, else information);
 * waiters with no visible watch and no such evidence are only information, since a children watch cannot be seen.
 */
export function relistingHerdHazard(shape: LockShape, table: ClientWatchTable | null, min: number): Hazard | null {
  const { unseen, relisting } = unseenWatchers(shape, table);
  if (unseen.length === 0 && relisting.length === 0) return null;
  const hidden =
    table?.unlistedWatches !== undefined && table.unlistedWatches !== null && table.unlistedWatches > 0
      ? ` The server holds ${table.unlistedWatches} watch${table.unlistedWatches === 1 ? "" : "es"} its listings do not show (mntr zk_watch_count less wchs's total): child watches.`
      : "";
  if (relisting.length > 0) {
    return {
      code: "herd",
      severity: relisting.length >= min ? "warning" : "info",
      message:
        `${names(relisting)} ${relisting.length === 1 ? "watches" : "watch"} no node of this lock and last re-listed the parent ` +
        `(cons: lop=GETC): a children watch on the parent, so every change wakes ${relisting.length === 1 ? "it" : "them all"} (observed).${hidden}`,
    };
  }
  return {
    code: "watch-not-visible",
    severity: "info",
    message: `No data watch visible for ${names(unseen)}; a children watch on the parent (herd) cannot be seen in the server's watch listings.${hidden}`,
  };
}

/** Lock parents left empty pile up when a library never deletes them (zk-lock, kazoo): reads and memory grow. */
export function emptyParentsHazard(dir: string, count: number, min: number): Hazard | null {
  if (count < min) return null;
  return {
    code: "empty-lock-parents",
    severity: "warning",
    message: `${count} empty lock parents under ${escapeText(dir, 200)}: the lock library leaves them behind; every client listing them pays for it (consider containers or a reaper).`,
  };
}
