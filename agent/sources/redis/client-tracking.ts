import { Redis } from "ioredis";
import type { TrackedCompanion } from "./lean-connection";

/**
 * Server-assisted client tracking (Redis 6+), over RESP2 so it works with ioredis:
 * - a redirect connection asks its CLIENT ID, then SUBSCRIBEs to `__redis__:invalidate`;
 * - the reading connection (the one that samples locks) runs `CLIENT TRACKING ON REDIRECT <id>`: from then on the
 *   server names on the redirect connection every key that connection has read, the moment it is written,
 *   renewed, deleted or expired (an expiry only when the server really deletes the key: see core/deadline-heap.ts);
 * - optionally a third, idle connection runs `CLIENT TRACKING ON REDIRECT <id> BCAST PREFIX p ...` for the
 *   literal prefixes of LOCK_PATTERNS, so new keys under them are announced too. BCAST and per-key tracking
 *   cannot be mixed on one connection, and BCAST must not cover the reader's keys twice, hence its own connection.
 *
 * Nothing tells a tracking connection over RESP2 that its redirect connection died (its invalidations then go
 * nowhere), so this module watches the redirect connection itself: when it closes, tracking is reported lost
 * (the source polls everything meanwhile); when it is back, tracking is re-enabled with the new id and reported
 * live, and the source re-reads every known key once. The same happens when the reading connection reconnects
 * (tracking is a property of the connection).
 */

export const INVALIDATE_CHANNEL = "__redis__:invalidate";

export type TrackingState =
  /** note: why the BCAST prefixes are not registered (its only use; per-key tracking is live either way). */
  | { live: true; note?: string }
  /** refused: the server will not track (old Redis, ACL, a proxy): the caller falls back to polling for good. */
  | { live: false; refused: boolean; reason: string };

export interface ClientTrackingOptions {
  url: string;
  /** The connection whose reads are tracked; it must stay the one that samples lock keys. */
  reader: Redis;
  /**
   * The reader's lean connection for bulk reads (lean-connection.ts), tracked with the same redirect whenever the
   * reader is; its loss is a loss of tracking (its keys' invalidations are gone with it).
   */
  companion?: TrackedCompanion;
  /** BCAST prefixes (bcast-prefixes.ts); empty for none. */
  prefixes: readonly string[];
  commandTimeoutMs: number;
  /** Keys named by an invalidation (written, renewed, deleted, expired, evicted from the tracking table). */
  onKeys: (keys: Buffer[]) => void;
  /** An invalidation without keys: FLUSHALL or FLUSHDB, "everything may have changed". */
  onFlush: () => void;
  onState: (state: TrackingState) => void;
  log: (line: string) => void;
  /** How often the idle redirect connection is pinged, so a silently dead one is noticed. */
  keepaliveMs?: number;
}

export interface ClientTracking {
  /** Settles after the first attempt to enable tracking: live, refused, or not reachable yet (retried). */
  ready: Promise<TrackingState>;
  close(): void;
}

/** Errors that mean "this server or user will never track": fall back to polling instead of retrying. */
const REFUSED =
  /\b(?:NOPERM|unknown command|unknown subcommand|Unknown subcommand|syntax error|not allowed|ERR unknown)\b/i;

export function isRefusal(message: string): boolean {
  return REFUSED.test(message);
}

/**
 * The one log line for a refusal: what was refused, the server's words, and what to grant. Sample NOPERM of
 * redis 7.0: "NOPERM this user has no permissions to run the 'client|tracking' command".
 */
export function refusalLine(command: string, message: string): string {
  const m = /'([a-z|]+)' command/i.exec(message);
  const grant = m ? ` (grant +${m[1]!.toLowerCase()})` : "";
  return `${command} refused: ${message.replace(/^ReplyError: /, "")}${grant}`;
}

/** The redirect connection closed while enable() ran: its "ready" runs the next one. */
class ConnectionReplaced extends Error {
  constructor() {
    super("the invalidation connection was replaced");
  }
}

export function startClientTracking(opts: ClientTrackingOptions): ClientTracking {
  const redirect = new Redis(opts.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs,
    connectTimeout: Math.max(1000, opts.commandTimeoutMs),
    connectionName: "lockscope-agent-invalidations",
    // Re-subscribing by itself would skip CLIENT ID and the re-enabling on the reader: done in enable() instead.
    autoResubscribe: false,
    // Nor is a SUBSCRIBE sent to the old connection replayed on the new one (see enable()).
    autoResendUnfulfilledCommands: false,
    retryStrategy: (times) => Math.min(200 * 2 ** Math.min(times, 6), 5_000),
  });
  redirect.on("error", () => undefined); // the state below says what matters; the source reports the node's health
  let announcer: Redis | null = null;
  let closed = false;
  let refused = false;
  let live = false;
  let enabling: Promise<TrackingState> | null = null;
  let enableAgain = false;
  let keepalive: NodeJS.Timeout | null = null;
  /** The redirect connection's CLIENT ID, once it is subscribed, while that connection stays up. */
  let subscribedId: string | null = null;
  /** Counts the redirect connection's closes: what an enable() learnt before one is about a connection gone. */
  let epoch = 0;

  const report = (state: TrackingState) => {
    // An enable() still in flight when the node was replaced (a cluster failover) must not set the mode of the
    // source that a newer tracking now serves.
    if (closed) return;
    live = state.live;
    opts.onState(state);
  };

  redirect.on("messageBuffer", (channel: Buffer, message: unknown) => {
    if (channel.toString() !== INVALIDATE_CHANNEL) return;
    if (message === null) opts.onFlush();
    else if (Array.isArray(message)) opts.onKeys(message.filter((k): k is Buffer => Buffer.isBuffer(k)));
    else if (Buffer.isBuffer(message)) opts.onKeys([message]);
  });

  /**
   * CLIENT ID, SUBSCRIBE, then tracking on the reader (and BCAST on the announcer).
   *
   * A server restart can land between any two steps. A step's answer then belongs to a connection that is gone:
   * its id, given to the new server's reader, names nothing or another client's connection there. So each step
   * checks that the redirect connection is the one it started on, and the id is kept only once that very
   * connection is subscribed. Commands sent to a connection that closed are not replayed on the next one
   * (autoResendUnfulfilledCommands off here and on the announcer): a replayed SUBSCRIBE had subscribed the new
   * connection behind this code's back, and CLIENT ID then failed "in subscriber mode" on every retry.
   */
  async function enable(): Promise<TrackingState> {
    if (closed || refused) return { live: false, refused, reason: "stopped" };
    if (redirect.status !== "ready" || opts.reader.status !== "ready") {
      return { live: false, refused: false, reason: "not connected" };
    }
    const started = epoch;
    const sameConnection = () => {
      if (epoch !== started) throw new ConnectionReplaced();
    };
    /**
     * A step's answer, or ConnectionReplaced as soon as the redirect connection closes: ioredis does not replay
     * what the closed connection had not answered (autoResendUnfulfilledCommands off), and settles it only at its
     * timeout.
     */
    const onThisConnection = async <T>(step: Promise<T>): Promise<T> => {
      step.catch(() => undefined);
      sameConnection();
      let onClose = () => undefined as void;
      const closed = new Promise<never>((_, reject) => {
        onClose = () => reject(new ConnectionReplaced());
        redirect.once("close", onClose);
      });
      try {
        return await Promise.race([step, closed]);
      } finally {
        redirect.off("close", onClose);
      }
    };
    let step = "CLIENT ID";
    try {
      // Asked once a connection: re-enabled while it stays up (the lean connection was lost), it is subscribed
      // already and answers subscriber commands only.
      let id = subscribedId;
      if (id === null) {
        id = String(await onThisConnection(redirect.call("CLIENT", "ID")));
        step = "SUBSCRIBE __redis__:invalidate";
        await onThisConnection(redirect.subscribe(INVALIDATE_CHANNEL));
        subscribedId = id;
      }
      step = "CLIENT TRACKING";
      await onThisConnection(opts.reader.call("CLIENT", "TRACKING", "ON", "REDIRECT", id));
      // Without it (refused, unreachable, TLS) the reader carries every read, tracked, as before it existed.
      if (opts.companion) await onThisConnection(opts.companion.track(id));
      const note = await onThisConnection(enableBroadcast(id));
      sameConnection();
      const state: TrackingState = note ? { live: true, note } : { live: true };
      report(state);
      return state;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (!(err instanceof ConnectionReplaced) && isRefusal(message)) {
        refused = true;
        opts.companion?.untracked();
        const reason = refusalLine(step, message);
        stop();
        const state: TrackingState = { live: false, refused: true, reason };
        report(state);
        return state;
      }
      // A timeout or a connection lost mid-way: retried on the next reconnect or keepalive.
      const state: TrackingState = { live: false, refused: false, reason: `${step}: ${message}` };
      report(state);
      return state;
    }
  }

  /** BCAST is an extra: refused or failed, per-key tracking and the paced SCAN still find everything. */
  async function enableBroadcast(id: string): Promise<string | undefined> {
    if (opts.prefixes.length === 0) return undefined;
    try {
      if (!announcer) {
        announcer = new Redis(opts.url, {
          lazyConnect: true,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          commandTimeout: opts.commandTimeoutMs,
          connectionName: "lockscope-agent-bcast",
          // Its registration is redone with the current id when it is back, never replayed with an old one.
          autoResendUnfulfilledCommands: false,
          retryStrategy: (times) => Math.min(200 * 2 ** Math.min(times, 6), 5_000),
        });
        announcer.on("error", () => undefined);
        // Its tracking also ends with its connection: re-register when it comes back.
        announcer.on("ready", () => {
          if (live && redirectId !== null) void registerBroadcast(redirectId).catch(() => undefined);
        });
        await announcer.connect();
      }
      redirectId = id;
      await registerBroadcast(id);
      return undefined;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const line = `BCAST prefixes ${opts.prefixes.join(", ")} not registered (${message}); new keys under them are found by the paced SCAN`;
      opts.log(line);
      return line;
    }
  }
  let redirectId: string | null = null;

  async function registerBroadcast(id: string): Promise<void> {
    if (!announcer || announcer.status !== "ready") return;
    const args = ["TRACKING", "ON", "REDIRECT", id, "BCAST", ...opts.prefixes.flatMap((p) => ["PREFIX", p])];
    // When the invalidation connection was replaced (a new CLIENT ID) while this one stayed up, it still holds its
    // prefixes, redirected to the old id, and Redis refuses to register them again ("Prefix 'mutex:' overlaps with
    // an existing prefix"): the announcements went to a connection that no longer exists. Off first, then on with
    // the new id; a key written between the two is found by the paced SCAN.
    await announcer.call("CLIENT", "TRACKING", "OFF");
    await announcer.call("CLIENT", ...args);
  }

  /**
   * One enable() at a time. A reason to enable that arrives while one runs (a connection ready again, the lean
   * connection lost) runs another after it: the one in flight may have started before that connection came back
   * (a server restart: the lean connection's loss starts one while the others are still closing), and waiting for
   * the next keepalive would leave the node polling for up to 10 s.
   */
  function tryEnable(): void {
    if (closed || refused) return;
    if (enabling) {
      enableAgain = true;
      return;
    }
    enabling = enable().finally(() => {
      enabling = null;
      if (enableAgain) {
        enableAgain = false;
        tryEnable();
      }
    });
  }

  redirect.on("ready", tryEnable);
  opts.companion?.onLost((reason) => {
    if (closed || refused) return;
    if (live) report({ live: false, refused: false, reason: `${reason}; polling until tracking is enabled again` });
    tryEnable();
  });
  opts.reader.on("ready", tryEnable);
  redirect.on("close", () => {
    subscribedId = null;
    epoch++;
    if (closed || refused) return;
    if (live)
      report({ live: false, refused: false, reason: "the invalidation connection was lost; polling until it is back" });
  });

  const keepaliveMs = opts.keepaliveMs ?? 10_000;
  keepalive = setInterval(() => {
    if (closed || refused) return;
    if (redirect.status === "ready") {
      // A connection that stopped answering is closed so that the reconnect path re-enables tracking (not the
      // next one: a PING the closed connection did not answer fails only at its timeout).
      const pinged = epoch;
      redirect.ping().catch(() => {
        if (epoch === pinged) redirect.disconnect(true);
      });
    }
    if (!live) tryEnable();
  }, keepaliveMs);
  keepalive.unref?.();

  function stop(): void {
    if (keepalive) clearInterval(keepalive);
    keepalive = null;
    redirect.disconnect();
    announcer?.disconnect();
  }

  const ready = (async (): Promise<TrackingState> => {
    await redirect.connect().catch(() => undefined);
    // Through tryEnable(), so that no other enable() runs beside it (the connection's "ready" has started one).
    if (!enabling) tryEnable();
    return enabling ?? { live: false, refused, reason: refused ? "refused" : "stopped" };
  })();

  return {
    ready,
    close() {
      closed = true;
      stop();
    },
  };
}

export interface TrackedReaderOptions extends Omit<ClientTrackingOptions, "onState" | "log"> {
  /** How the node appears in the log ("redis://127.0.0.1:6379/0", "redlock default: node ..."). */
  label: string;
  log: (line: string) => void;
  /** Track while the server announces changes; poll otherwise (refused, or lost until it is back), with why. */
  onMode: (mode: "track" | "poll", note?: string) => void;
}

/**
 * One tracked reading connection as a source uses it: tracking's state becomes the source's change-detection mode,
 * logged once per change (a refusal once, with what to grant). Shared by standalone Redis nodes, each Redis
 * Cluster master and each member of a Redlock group.
 */
export function startTrackedReader(opts: TrackedReaderOptions): ClientTracking {
  let last = "";
  const { label, log, onMode, ...tracking } = opts;
  const say = (line: string) => {
    if (line !== last) log(`${label}: ${line}`);
    last = line;
  };
  return startClientTracking({
    ...tracking,
    log: (line) => log(`${label}: ${line}`),
    onState: (state) => {
      if (state.live) {
        onMode("track", state.note);
        // With BCAST refused or failed (the line before says why), the prefixes are not claimed here.
        const bcast =
          opts.prefixes.length === 0 ? "" : state.note ? " (no BCAST)" : ` (BCAST ${opts.prefixes.join(", ")})`;
        say(`change detection: CLIENT TRACKING${bcast}`);
        return;
      }
      onMode("poll", state.reason);
      say(
        state.refused
          ? `${state.reason}; change detection falls back to polling within the server-time budget`
          : `client tracking not live (${state.reason}); polling meanwhile`,
      );
    },
  });
}
