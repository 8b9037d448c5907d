/**
 * Pure queue logic: from the nodes read under a lock parent to who holds, who waits on whom, and the contract's
 * ZkLockView and Lock. No I/O; the source reads, these functions decide.
 */
import { fingerprintOf } from "../../release/fingerprint";
import type { Hazard, LockHolder, Waiter, ZkContender, ZkLockView, ZkWatcher } from "../../../lib/contract/lock";
import { escapeBytes, escapeText } from "../../core/escape";
import { lockId } from "../../core/lock-id";
import type { ObservedLock } from "../../core/tracker";
import {
  dominantRecipe,
  looksLikeIpAddress,
  RECIPES,
  recogniseChild,
  type ContenderMode,
  type RecipeId,
  type WaitPolicy,
} from "./recipes";

/** One node as read from ZooKeeper (getData: data and stat). */
export interface NodeSample {
  name: string;
  /** ephemeralOwner, 0x-prefixed lowercase hex; "0x0" for a persistent node. */
  session: string;
  ctimeMs: number;
  /** The zxid that created the node (hex), when read: tells a re-created node from the one seen before. */
  czxid?: string;
  /** Bounded prefix of the node's data; null when the node has none. */
  data: Buffer | null;
  dataLength: number;
}

export type LockShapeKind = "queue" | "curator-semaphore-v2" | "kazoo-semaphore" | "simple";

export interface Contender {
  /** Name as shown in the view: the child name, or `leases/<name>` style for recipes that span two directories. */
  name: string;
  /** Full path (client view, chroot not included). */
  path: string;
  sequence: number | null;
  mode: ContenderMode;
  recipe: RecipeId;
  library: string;
  rule: string;
  nameId?: string;
  session: string;
  ephemeral: boolean;
  ctimeMs: number;
  data: Buffer | null;
  dataLength: number;
  /** The zxid that created the node (hex), when read. */
  czxid?: string;
  role: "holder" | "waiter";
  /** What it waits on: a contender's `name`, or (for watches on a directory's children) that directory's path. */
  waitsFor: string | null;
  /** The watched path, for matching against the server's watch table. */
  waitsForPath: string | null;
  /** true when waitsFor is a directory whose children are watched (the herd pattern). */
  waitsOnChildren: boolean;
}

export interface LockShape {
  kind: LockShapeKind;
  /** The lock's path: the parent for queues and semaphores, the node itself for single-node locks. */
  path: string;
  recipe: RecipeId;
  library: string;
  rule: string;
  policy: WaitPolicy;
  /** Queue order: holders first as the recipe decides, then waiters. */
  contenders: Contender[];
  maxLeases: number | null;
  /** Recipes seen among the contenders; more than one means clients may disagree on the order. */
  recipes: RecipeId[];
}

const ZERO_SESSION = "0x0";

function joinPath(parent: string, name: string): string {
  return parent === "/" ? `/${name}` : `${parent}/${name}`;
}

function compareSequence(
  a: { sequence: number | null; name: string },
  b: { sequence: number | null; name: string },
): number {
  const sa = a.sequence ?? Number.MAX_SAFE_INTEGER;
  const sb = b.sequence ?? Number.MAX_SAFE_INTEGER;
  if (sa !== sb) return sa - sb;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function toContender(parent: string, n: NodeSample, shownName = n.name): Contender | null {
  const r = recogniseChild(n.name, n.data);
  if (!r) return null;
  const c: Contender = {
    name: shownName,
    path: joinPath(parent, n.name),
    sequence: r.sequence,
    mode: r.mode,
    recipe: r.recipe,
    library: r.library,
    rule: r.rule,
    session: n.session,
    ephemeral: n.session !== ZERO_SESSION,
    ctimeMs: n.ctimeMs,
    data: n.data,
    dataLength: n.dataLength,
    role: "waiter",
    waitsFor: null,
    waitsForPath: null,
    waitsOnChildren: false,
  };
  if (r.nameId) c.nameId = r.nameId;
  if (n.czxid) c.czxid = n.czxid;
  return c;
}

const isWriter = (c: Contender) => c.mode !== "read";

/**
 * Decides holders and whom each waiter watches, in place, for an ordered sequential queue.
 * Mutex and latch: the lowest holds. Read/write: readers hold together until the first writer; a writer holds only
 * when lowest. Waiters watch their predecessor; readers the nearest writer before them (Curator: the first writer);
 * with the "children" policy every waiter watches the parent's children instead.
 */
export function decideQueue(ordered: Contender[], policy: WaitPolicy, parentPath: string): void {
  let firstWriter: Contender | null = null;
  let lastWriter: Contender | null = null;
  ordered.forEach((c, i) => {
    const reader = c.mode === "read";
    const holds = reader ? firstWriter === null : i === 0;
    c.role = holds ? "holder" : "waiter";
    c.waitsFor = null;
    c.waitsForPath = null;
    c.waitsOnChildren = false;
    if (!holds) {
      if (policy === "children") {
        c.waitsFor = parentPath;
        c.waitsForPath = parentPath;
        c.waitsOnChildren = true;
      } else {
        const target = reader ? (policy === "predecessor-first-writer" ? firstWriter : lastWriter) : ordered[i - 1]!;
        if (target) {
          c.waitsFor = target.name;
          c.waitsForPath = target.path;
        }
      }
    }
    if (isWriter(c)) {
      firstWriter ??= c;
      lastWriter = c;
    }
  });
}

/** A lock parent whose children are sequential contenders (every recipe except the semaphores and single nodes). */
export function planQueue(parentPath: string, children: readonly NodeSample[]): LockShape | null {
  const contenders = children.map((n) => toContender(parentPath, n)).filter((c): c is Contender => c !== null);
  if (contenders.length === 0) return null;
  contenders.sort(compareSequence);
  const recipe = dominantRecipe(contenders)!;
  const policy = RECIPES[recipe].waitPolicy;
  // Contenders of a different recipe under the same parent are still in the queue; leases outside a semaphore
  // and latches behave like exclusive nodes.
  for (const c of contenders) if (c.mode === "lease") c.mode = "exclusive";
  decideQueue(contenders, policy, parentPath);
  return {
    kind: "queue",
    path: parentPath,
    recipe,
    library: RECIPES[recipe].library,
    rule: contenders.find((c) => c.recipe === recipe)!.rule,
    policy,
    contenders,
    maxLeases: null,
    recipes: [...new Set(contenders.map((c) => c.recipe))],
  };
}

/**
 * Curator InterProcessSemaphoreV2: `<path>/leases/_c_<uuid>-lease-<seq>` are leases (the lowest k hold, k = max
 * leases when known, otherwise every lease counts as held); `<path>/locks/` is the internal mutex that queues
 * acquirers one at a time. Its lowest node is the acquirer waiting for a free lease (watching the leases' children);
 * the others wait on their predecessor.
 */
export function planCuratorSemaphore(
  path: string,
  leases: readonly NodeSample[],
  locks: readonly NodeSample[],
  maxLeases: number | null,
): LockShape | null {
  const leasesDir = joinPath(path, "leases");
  const locksDir = joinPath(path, "locks");
  const held = leases
    .map((n) => toContender(leasesDir, n, `leases/${n.name}`))
    .filter((c): c is Contender => c !== null)
    .sort(compareSequence);
  const queue = locks
    .map((n) => toContender(locksDir, n, `locks/${n.name}`))
    .filter((c): c is Contender => c !== null)
    .sort(compareSequence);
  if (held.length + queue.length === 0) return null;
  held.forEach((c, i) => {
    c.mode = "lease";
    const holds = maxLeases === null || i < maxLeases;
    c.role = holds ? "holder" : "waiter";
    if (!holds) Object.assign(c, { waitsFor: leasesDir, waitsForPath: leasesDir, waitsOnChildren: true });
  });
  queue.forEach((c, i) => {
    c.mode = "exclusive";
    c.role = "waiter";
    if (i === 0) Object.assign(c, { waitsFor: leasesDir, waitsForPath: leasesDir, waitsOnChildren: true });
    else Object.assign(c, { waitsFor: queue[i - 1]!.name, waitsForPath: queue[i - 1]!.path, waitsOnChildren: false });
  });
  const contenders = [...held, ...queue];
  return {
    kind: "curator-semaphore-v2",
    path,
    recipe: "curator-semaphore-v2",
    library: "curator",
    rule: "curator semaphore v2: <path>/leases and <path>/locks",
    policy: "predecessor",
    contenders,
    maxLeases,
    recipes: [...new Set(contenders.map((c) => c.recipe))],
  };
}

/**
 * kazoo Semaphore: holders are `<path>/<32 hex>` (EPHEMERAL, not sequential, so ordered by ctime); acquirers queue
 * in the kazoo lock at `<path>-__lock__`, whose lowest node watches `<path>`'s children for a free slot.
 */
export function planKazooSemaphore(
  path: string,
  holders: readonly NodeSample[],
  queue: readonly NodeSample[],
  maxLeases: number | null,
): LockShape | null {
  const queueDir = `${path}-__lock__`;
  const queueLabel = `${path.slice(path.lastIndexOf("/") + 1)}-__lock__`;
  const held: Contender[] = [...holders]
    .sort((a, b) => a.ctimeMs - b.ctimeMs || (a.name < b.name ? -1 : 1))
    .map((n) => ({
      name: n.name,
      path: joinPath(path, n.name),
      sequence: null,
      mode: "lease",
      recipe: "kazoo-semaphore",
      library: "kazoo",
      rule: "kazoo semaphore holder <32hex>",
      nameId: n.name,
      session: n.session,
      ephemeral: n.session !== ZERO_SESSION,
      ctimeMs: n.ctimeMs,
      data: n.data,
      dataLength: n.dataLength,
      ...(n.czxid ? { czxid: n.czxid } : {}),
      role: "holder",
      waitsFor: null,
      waitsForPath: null,
      waitsOnChildren: false,
    }));
  const waiting = queue
    .map((n) => toContender(queueDir, n, `${queueLabel}/${n.name}`))
    .filter((c): c is Contender => c !== null)
    .sort(compareSequence);
  if (held.length + waiting.length === 0) return null;
  waiting.forEach((c, i) => {
    c.role = "waiter";
    c.mode = "lease";
    if (i === 0) Object.assign(c, { waitsFor: path, waitsForPath: path, waitsOnChildren: true });
    else
      Object.assign(c, { waitsFor: waiting[i - 1]!.name, waitsForPath: waiting[i - 1]!.path, waitsOnChildren: false });
  });
  const contenders = [...held, ...waiting];
  return {
    kind: "kazoo-semaphore",
    path,
    recipe: "kazoo-semaphore",
    library: "kazoo",
    rule: "kazoo semaphore: <32hex> children, queue at <path>-__lock__",
    policy: "predecessor",
    contenders,
    maxLeases,
    recipes: ["kazoo-semaphore"],
  };
}

/** A single EPHEMERAL node that is the lock itself (`/product-lock-42`); waiters only show as watchers of it. */
export function planSimple(path: string, node: NodeSample): LockShape {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return {
    kind: "simple",
    path,
    recipe: "simple-ephemeral",
    library: "generic",
    rule: "single ephemeral node named *lock*",
    policy: "predecessor",
    contenders: [
      {
        name,
        path,
        sequence: null,
        mode: "exclusive",
        recipe: "simple-ephemeral",
        library: "generic",
        rule: "single ephemeral node named *lock*",
        session: node.session,
        ephemeral: node.session !== ZERO_SESSION,
        ctimeMs: node.ctimeMs,
        data: node.data,
        dataLength: node.dataLength,
        ...(node.czxid ? { czxid: node.czxid } : {}),
        role: "holder",
        waitsFor: null,
        waitsForPath: null,
        waitsOnChildren: false,
      },
    ],
    maxLeases: null,
    recipes: ["simple-ephemeral"],
  };
}

/** Observed watches, already translated to client paths (chroot removed). */
export interface ClientWatchTable {
  byPath: ReadonlyMap<string, ReadonlySet<string>>;
  /** The same watches by session (what `wchc` lists). */
  bySession: ReadonlyMap<string, ReadonlySet<string>>;
  hosts: ReadonlyMap<string, string>;
  /** Every server answered: absence of a watch is a fact. */
  complete: boolean;
  sessionsComplete: boolean;
  /** session -> last request (cons `lop`), when cons was read. */
  lastOps?: ReadonlyMap<string, string>;
  /** Child watches the listings hide (mntr zk_watch_count - wchs total); null or absent when not known. */
  unlistedWatches?: number | null;
}

const MAX_WATCHERS_SHOWN = 200;
const PREVIEW_CHARS = 128;
const NAME_CHARS = 256;

/** Bounded, printable preview of a node's data. */
export function dataPreview(n: Pick<Contender, "data" | "dataLength">): string | null {
  if (!n.data || n.data.length === 0) return null;
  return escapeBytes(n.data, PREVIEW_CHARS, Math.max(n.dataLength, n.data.length));
}

/** Who watches each contender: read from the server when possible, otherwise inferred from the recipe. */
export function watchersOf(shape: LockShape, table: ClientWatchTable | null): Map<string, ZkWatcher[]> {
  const out = new Map<string, ZkWatcher[]>();
  for (const c of shape.contenders) out.set(c.path, []);
  if (table?.complete) {
    for (const c of shape.contenders) {
      const sessions = table.byPath.get(c.path);
      if (!sessions) continue;
      const list = out.get(c.path)!;
      for (const s of sessions) {
        if (list.length >= MAX_WATCHERS_SHOWN) break;
        const w: ZkWatcher = { session: s, observed: true };
        const host = table.hosts.get(s);
        if (host) w.host = host;
        list.push(w);
      }
    }
    return out;
  }
  for (const c of shape.contenders) {
    if (c.role !== "waiter" || !c.waitsForPath || c.waitsOnChildren) continue;
    const list = out.get(c.waitsForPath);
    if (!list || list.length >= MAX_WATCHERS_SHOWN) continue;
    const w: ZkWatcher = { session: c.session, observed: false };
    const host = table?.hosts.get(c.session);
    if (host) w.host = host;
    list.push(w);
  }
  return out;
}

export interface ViewOptions {
  /** Contenders listed in the view and as waiters (queue order); the total is in holder.contenders. */
  maxShown: number;
  /** The long-wait threshold, passed on so a viewer marks waiters as their wait counts up. */
  longWaitMs?: number;
}

export const DEFAULT_VIEW_OPTIONS: ViewOptions = { maxShown: 1000 };

export function buildZkView(
  shape: LockShape,
  table: ClientWatchTable | null,
  opts: ViewOptions = DEFAULT_VIEW_OPTIONS,
): ZkLockView {
  const watchers = watchersOf(shape, table);
  const contenders: ZkContender[] = shape.contenders.slice(0, opts.maxShown).map((c) => ({
    node: escapeText(c.name, NAME_CHARS),
    sequence: c.sequence,
    session: c.session,
    ephemeral: c.ephemeral,
    ctime: new Date(c.ctimeMs).toISOString(),
    role: c.role,
    mode: c.mode,
    waitsFor: c.waitsFor === null ? null : escapeText(c.waitsFor, NAME_CHARS),
    watchedBy: watchers.get(c.path) ?? [],
    dataPreview: dataPreview(c),
    ...hostOf(c, table),
  }));
  const view: ZkLockView = {
    recipe: shape.recipe,
    parent: escapeText(shape.path, 1024),
    contenders,
    watchesObserved: table?.complete ?? false,
  };
  if (opts.longWaitMs !== undefined) view.longWaitMs = opts.longWaitMs;
  return view;
}

/** The contender's client: its session's address from `cons`, else the IP address Curator writes as node data. */
function hostOf(c: Contender, table: ClientWatchTable | null): { host?: string } {
  const address = table?.hosts.get(c.session);
  if (address) return { host: escapeText(address, 128) };
  if (c.library === "curator" && looksLikeIpAddress(c.data)) return { host: escapeBytes(c.data!, 64) };
  return {};
}

/** ZooKeeper's WriteLock puts the session id in decimal into the name; shown as the usual 0x hex. */
function decimalSessionToHex(text: string): string | null {
  try {
    return `0x${BigInt.asUintN(64, BigInt(text)).toString(16)}`;
  } catch {
    return null;
  }
}

export function holderDetails(shape: LockShape, table: ClientWatchTable | null): LockHolder | null {
  const holders = shape.contenders.filter((c) => c.role === "holder");
  const h = holders[0];
  if (!h) return { contenders: shape.contenders.length, holders: 0 };
  const out: LockHolder = {
    session: h.session,
    node: escapeText(h.name, NAME_CHARS),
    queuedAt: new Date(h.ctimeMs).toISOString(),
  };
  if (h.sequence !== null) out.sequence = h.sequence;
  if (!h.ephemeral) out.ephemeral = false;
  const text = h.data && h.data.length > 0 ? h.data.toString("utf8") : "";
  if (h.library === "curator" && looksLikeIpAddress(h.data)) out.host = text;
  if (h.recipe === "kazoo-lock" || h.recipe === "kazoo-semaphore") {
    if (text !== "") out.identifier = escapeText(text, PREVIEW_CHARS);
  }
  if (h.recipe === "curator-leader-latch" && text !== "") out.participantId = escapeText(text, PREVIEW_CHARS);
  if (h.recipe === "zookeeper-write-lock" && h.nameId) {
    const hex = decimalSessionToHex(h.nameId);
    if (hex) out.nameSession = hex;
  }
  if (h.nameId && (h.library === "curator" || h.library === "kazoo")) out.clientId = h.nameId;
  const address = table?.hosts.get(h.session);
  if (address) out.clientAddress = address;
  if (holders.length > 1) out.holders = holders.length;
  if (shape.maxLeases !== null) out.maxLeases = shape.maxLeases;
  out.contenders = shape.contenders.length;
  return out;
}

function waiterDetail(c: Contender): string {
  const parts: string[] = [c.mode];
  if (c.waitsFor) parts.push(c.waitsOnChildren ? `watches children of ${c.waitsFor}` : `waits for ${c.waitsFor}`);
  parts.push(`session ${c.session}`);
  return escapeText(parts.join("; "), 512);
}

export interface LockContext {
  sourceId: string;
  agentId: string;
  observedAtMs: number;
}

const KIND: Record<LockShapeKind, string> = {
  queue: "ephemeral-sequential",
  "curator-semaphore-v2": "semaphore",
  "kazoo-semaphore": "semaphore",
  simple: "ephemeral",
};

/** Node data that reads as a holder's name: short printable UTF-8 (`driver-7`), nothing binary or multi-line. */
function nameInData(c: Pick<Contender, "data" | "dataLength">): string | null {
  if (!c.data || c.data.length === 0 || c.data.length !== c.dataLength || c.data.length > 128) return null;
  const text = c.data.toString("utf8");
  if (!Buffer.from(text, "utf8").equals(c.data) || !/^[\p{L}\p{N}\p{P}\p{S} ]+$/u.test(text)) return null;
  return text.trim() === "" ? null : text;
}

/**
 * Who holds, as shown: the node's name, except for single-node locks whose name is the resource itself and says
 * nothing about the holder; where that recipe writes the holder's name as the node's data (`driver-7`), the data.
 */
export function holderOwner(shape: Pick<LockShape, "kind">, holder: Contender): string {
  if (shape.kind === "simple") {
    const named = nameInData(holder);
    if (named !== null) return escapeText(named, NAME_CHARS);
  }
  return escapeText(holder.name, NAME_CHARS);
}

/**
 * The exact holding: the node's path, its creation zxid and its session. A node deleted and created again between
 * two reads (by the next holder) has the same name but a new czxid and session, so it is a new holding.
 */
export function holdingFingerprint(holder: Pick<Contender, "path" | "session" | "czxid">): string | undefined {
  if (!holder.czxid) return undefined;
  return fingerprintOf(holder.path, holder.czxid, holder.session);
}

/** The contract Lock for one lock path (owner = first holder's node name, waiters in queue order). */
export function toObservedLock(
  shape: LockShape,
  table: ClientWatchTable | null,
  hazards: Hazard[],
  ctx: LockContext,
  opts: ViewOptions = DEFAULT_VIEW_OPTIONS,
): ObservedLock {
  const holder = shape.contenders.find((c) => c.role === "holder") ?? null;
  const waiters: Waiter[] = shape.contenders
    .filter((c) => c.role === "waiter")
    .slice(0, opts.maxShown)
    .map((c) => ({
      owner: escapeText(c.name, NAME_CHARS),
      since: new Date(c.ctimeMs).toISOString(),
      detail: waiterDetail(c),
    }));
  // A single-node lock has no queue: sessions watching the node are the ones waiting for it.
  if (shape.kind === "simple" && table?.complete) {
    const node = shape.contenders[0]!;
    for (const s of table.byPath.get(node.path) ?? []) {
      if (s !== node.session && waiters.length < opts.maxShown)
        waiters.push({ owner: s, detail: "watches the lock node (observed)" });
    }
  }
  return {
    id: lockId("zookeeper", ctx.sourceId, shape.path),
    backend: "zookeeper",
    source: ctx.sourceId,
    resource: escapeText(shape.path, 1024),
    owner: holder ? holderOwner(shape, holder) : null,
    ...(holder && holdingFingerprint(holder) ? { ownerFingerprint: holdingFingerprint(holder)! } : {}),
    library: shape.library,
    rule: shape.rule.slice(0, 128),
    ttlMs: null,
    holder: holderDetails(shape, table),
    waiters,
    observedAt: new Date(ctx.observedAtMs).toISOString(),
    kind: KIND[shape.kind],
    valuePreview: holder ? dataPreview(holder) : null,
    hazards,
    agentId: ctx.agentId,
    zookeeper: buildZkView(shape, table, opts),
  };
}
