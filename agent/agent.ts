import { newEventId } from "./core/event-id";
import type { Lock, LockEvent, SourceStatus } from "../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../lib/contract/release";
import { SourceCap } from "./core/source-cap";
import { mergeInto, type TrackerOutput } from "./core/tracker";
import type { WatchedSource } from "./sources/source-port";

export type { WatchedSource };

export interface AgentSink {
  publish(events: readonly LockEvent[], upserts: readonly Lock[], removed: readonly string[]): void;
}

/**
 * Polls every source on a fixed cadence (the next poll starts an interval after the previous one began, never
 * overlapping it), publishes what changed, and turns a source going down or up into an event.
 */
export class AgentLoop {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly wasUp = new Map<string, boolean>();
  /** When each source last completed a poll while up (epoch ms). */
  private readonly polledAt = new Map<string, number>();
  private readonly cap: SourceCap;
  private readonly cappedSources = new Set<string>();
  polls = 0;

  constructor(
    private readonly sources: readonly WatchedSource[],
    private readonly sink: AgentSink,
    private readonly opts: {
      agentId: string;
      pollIntervalMs: number;
      log: (line: string) => void;
      /** MAX_LOCKS_PER_SOURCE: locks published per source; the rest are counted (default 200,000). */
      maxLocksPerSource?: number;
    },
  ) {
    this.cap = new SourceCap(opts.maxLocksPerSource);
  }

  start(): void {
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Every source's status, with the flood cap's counts and hazard where it applies. */
  statuses(): SourceStatus[] {
    return this.sources
      .flatMap((s) => (s.statuses ? s.statuses() : [s.status()]))
      .map((s) => this.withPollTime(this.cap.status(s)));
  }

  /** When each source last completed a poll while up, and how often it is polled: a viewer can tell stale data. */
  private withPollTime(s: SourceStatus): SourceStatus {
    const at = this.polledAt.get(s.id);
    return {
      ...s,
      pollIntervalMs: this.opts.pollIntervalMs,
      ...(at !== undefined ? { lastPollAt: new Date(at).toISOString() } : {}),
    };
  }

  /** The locks the dashboard is shown (a snapshot): at most the cap per source. */
  locks(): Lock[] {
    return this.cap.locks(this.sources.flatMap((s) => s.locks()));
  }

  /** Everything goes to the dashboard through the flood cap. */
  private publish(events: readonly LockEvent[], upserts: readonly Lock[], removed: readonly string[]): void {
    const out = this.cap.filter(events, upserts, removed);
    this.sink.publish(out.events, out.upserts, out.removed);
  }

  /** Crossing the cap is logged once per source, not once per poll. */
  private logCap(status: SourceStatus): void {
    const over = (status.untracked ?? 0) > 0;
    if (over && !this.cappedSources.has(status.id)) {
      this.opts.log(`source ${status.id}: ${status.hazards?.[0]?.message ?? "too many locks"}`);
      this.cappedSources.add(status.id);
    } else if (!over) this.cappedSources.delete(status.id);
  }

  async pollOnce(): Promise<void> {
    const results = await Promise.all(this.sources.map((s) => s.poll()));
    const events: LockEvent[] = [];
    const upserts: Lock[] = [];
    const removed: string[] = [];
    const all: TrackerOutput = { events, upserts, removed };
    for (const r of results) mergeInto(all, r);
    const polledAt = Date.now();
    for (const status of this.statuses()) {
      if (status.up) this.polledAt.set(status.id, polledAt);
      this.logCap(status);
      const before = this.wasUp.get(status.id);
      if (before === status.up) continue;
      this.wasUp.set(status.id, status.up);
      // The first observation of a healthy source is not news; a source that starts down is.
      if (before !== undefined || !status.up) events.push(this.sourceEvent(status));
      this.opts.log(`source ${status.id} ${status.up ? "up" : `down: ${status.error ?? "unknown error"}`}`);
    }
    this.polls++;
    this.publish(events, upserts, removed);
  }

  /** Polls one source now, outside the cycle (a ZooKeeper watch fired), and publishes what changed. */
  async pollSource(source: WatchedSource): Promise<void> {
    try {
      this.push(await source.poll());
    } catch (err) {
      this.opts.log(`early poll failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** Publishes changes a source saw outside the poll cycle (keyspace notifications). */
  push(output: TrackerOutput): void {
    if (output.events.length || output.upserts.length || output.removed.length) {
      this.publish(output.events, output.upserts, output.removed);
    }
  }

  /** Runs a force-release on the source that reports the lock, and publishes what it changed. */
  async release(cmd: ReleaseCommand): Promise<ReleaseResult> {
    const source = this.sources.find((s) => (s.has ? s.has(cmd.lockId) : s.locks().some((l) => l.id === cmd.lockId)));
    if (!source)
      return {
        outcome: "nothing-to-do",
        message: "no source of this agent reports the lock now",
        plan: [],
        perNode: [],
      };
    if (!source.release) {
      return {
        outcome: "refused",
        message: `${source.status().kind} locks cannot be released by this agent`,
        plan: [],
        perNode: [],
      };
    }
    this.opts.log(
      `${cmd.dryRun ? "dry-run " : ""}force-release of ${cmd.lockId} by ${cmd.actor}: ${cmd.reason.slice(0, 200)}`,
    );
    const { result, output } = await source.release(cmd);
    this.opts.log(`force-release of ${cmd.lockId}: ${result.outcome} (${result.message})`);
    this.push(output);
    return result;
  }

  private sourceEvent(status: SourceStatus): LockEvent {
    const ev: LockEvent = {
      id: newEventId(),
      agentId: this.opts.agentId,
      type: status.up ? "source-up" : "source-down",
      lockId: `source-${Buffer.from(status.id).toString("base64url").slice(0, 100)}`,
      backend: status.kind,
      source: status.id,
      resource: status.id,
      owner: null,
      at: new Date().toISOString(),
    };
    if (status.error) ev.detail = { error: status.error.slice(0, 500) };
    return ev;
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const started = Date.now();
    try {
      await this.pollOnce();
    } catch (err) {
      this.opts.log(`poll failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (this.stopped) return;
    const wait = Math.max(0, this.opts.pollIntervalMs - (Date.now() - started));
    this.timer = setTimeout(() => void this.tick(), wait);
  }
}
