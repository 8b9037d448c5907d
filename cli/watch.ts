/**
 * `lockscope watch`: the live locks table in a terminal. It joins the dashboard's /ui socket.io namespace with the
 * API token in the handshake (lib/server/hub.ts), takes the state on connect and the deltas after, and redraws in
 * place: on every change (at most ten times a second) and every second for the TTL countdown.
 * Not on a terminal (a pipe, a test), each redraw is printed as a block after a blank line instead.
 */
import { io, type Socket } from "socket.io-client";
import type { Lock } from "../lib/contract/lock";
import { UI_NAMESPACE, type ServerToUiEvents, type UiToServerEvents } from "../lib/contract/socket";
import { locksTable, matchesFilter } from "./format";
import type { Terminal } from "./main";

/** Rows a watch subscribes to: more than a terminal shows, far fewer than a fleet holds. */
const WATCH_ROWS = 200;

interface Filter {
  backend?: string;
  hazard?: string;
  query?: string;
}

/** The live state as the UI namespace describes it: the lock and when its TTL was read. */
export class WatchModel {
  private readonly locks = new Map<string, { lock: Lock; receivedAtMs: number }>();

  replace(locks: readonly Lock[], atMs: number): void {
    this.locks.clear();
    for (const l of locks) this.locks.set(l.id, { lock: l, receivedAtMs: atMs });
  }

  apply(upserts: readonly Lock[], removed: readonly string[], atMs: number): void {
    for (const id of removed) this.locks.delete(id);
    for (const l of upserts) this.locks.set(l.id, { lock: l, receivedAtMs: atMs });
  }

  /** The locks with their TTLs as of `nowMs` (each counted down from when it was received). */
  view(filter: Filter, nowMs: number): Lock[] {
    return [...this.locks.values()]
      .filter(({ lock }) => matchesFilter(lock, filter))
      .map(({ lock, receivedAtMs }) =>
        lock.ttlMs === null ? lock : { ...lock, ttlMs: Math.max(0, lock.ttlMs - (nowMs - receivedAtMs)) },
      );
  }
}

/** The screen: a header line and the table; `ansi` clears and homes the terminal first. */
export function renderWatch(
  locks: readonly Lock[],
  header: { url: string; connected: boolean; nowMs: number },
  ansi: boolean,
): string {
  const state = header.connected ? "live" : "disconnected, reconnecting…";
  const time = new Date(header.nowMs).toISOString().slice(11, 19);
  const head = `lockscope watch ${header.url} · ${locks.length} lock${locks.length === 1 ? "" : "s"} · ${state} · ${time} UTC`;
  const body = locksTable(locks, header.nowMs, header.nowMs);
  return ansi ? `\x1b[H\x1b[2J${head}\n\n${body}\n` : `\n${head}\n${body}\n`;
}

export function watchLocks(url: string, token: string | null, filter: Filter, t: Terminal): Promise<number> {
  const ansi = Boolean(process.stdout.isTTY);
  const model = new WatchModel();
  let connected = false;
  let everConnected = false;
  let pending: NodeJS.Timeout | null = null;
  let last = "";

  return new Promise<number>((resolve) => {
    const socket: Socket<ServerToUiEvents, UiToServerEvents> = io(`${url}${UI_NAMESPACE}`, {
      auth: token ? { token } : {},
      transports: ["websocket"],
      reconnectionDelay: 500,
      reconnectionDelayMax: 5000,
    });
    const draw = () => {
      pending = null;
      const screen = renderWatch(model.view(filter, Date.now()), { url, connected, nowMs: Date.now() }, ansi);
      // Off a terminal only a changed table is printed, so a pipe is not flooded once a second.
      const table = screen.slice(screen.indexOf("\n", 1));
      if (!ansi && table === last) return;
      last = table;
      t.out(screen);
    };
    const schedule = () => {
      pending ??= setTimeout(draw, 100);
    };
    const tick = setInterval(draw, 1000);
    const finish = (code: number, message?: string) => {
      clearInterval(tick);
      if (pending) clearTimeout(pending);
      socket.close();
      if (message) t.err(`lockscope: ${message}\n`);
      resolve(code);
    };

    socket.on("connect", () => {
      connected = everConnected = true;
      schedule();
    });
    socket.on("disconnect", () => {
      connected = false;
      schedule();
    });
    socket.on("connect_error", (err) => {
      if (/unauthori[sz]ed/i.test(err.message)) {
        return finish(1, `${err.message} (give an API token with --token or LOCKSCOPE_TOKEN)`);
      }
      // Never connected: the dashboard is not there. Once it was, a restart is waited out (socket.io reconnects).
      if (!everConnected) finish(3, `cannot reach the dashboard at ${url}: ${err.message}`);
    });
    // The dashboard sends a subscribed view (filtered and sorted by it), never every lock: hazards first, a
    // terminal's worth of rows.
    const subscribe = () => {
      const query = {
        ...(filter.backend ? { backend: filter.backend } : {}),
        ...(filter.hazard ? { hazard: filter.hazard } : {}),
        ...(filter.query ? { q: filter.query } : {}),
        sort: "-hazards",
        limit: WATCH_ROWS,
      };
      socket.emit("view:subscribe", { viewId: "watch", query }, (ack) => {
        if (!ack.ok) finish(2, `the dashboard refused the view: ${ack.error ?? ack.param ?? "invalid"}`);
      });
    };
    socket.on("connect", subscribe);
    socket.on("view:update", (u) => {
      if (u.viewId !== "watch") return;
      if (u.full) model.replace(u.locks, Date.now());
      else model.apply(u.locks, u.removed, Date.now());
      schedule();
    });
    const stop = () => finish(0);
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}
