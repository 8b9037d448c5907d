import { randomUUID } from "node:crypto";
import type { Lock, LockEvent, SourceStatus } from "../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../lib/contract/release";
import type { TrackerOutput } from "./core/tracker";
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
  polls = 0;

  constructor(
    private readonly sources: readonly WatchedSource[],
    private readonly sink: AgentSink,
    private readonly opts: { agentId: string; pollIntervalMs: number; log: (line: string) => void },
  ) {}

  start(): void {
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  statuses(): SourceStatus[] {
    return this.sources.flatMap((s) => (s.statuses ? s.statuses() : [s.status()]));
  }

  locks(): Lock[] {
    return this.sources.flatMap((s) => s.locks());
  }

  async pollOnce(): Promise<void> {
    const results = await Promise.all(this.sources.map((s) => s.poll()));
    const events: LockEvent[] = [];
    const upserts: Lock[] = [];
    const removed: string[] = [];
    results.forEach((r) => {
      events.push(...r.events);
      upserts.push(...r.upserts);
      removed.push(...r.removed);
    });
    for (const status of this.statuses()) {
      const before = this.wasUp.get(status.id);
      if (before === status.up) continue;
      this.wasUp.set(status.id, status.up);
      // The first observation of a healthy source is not news; a source that starts down is.
      if (before !== undefined || !status.up) events.push(this.sourceEvent(status));
      this.opts.log(`source ${status.id} ${status.up ? "up" : `down: ${status.error ?? "unknown error"}`}`);
    }
    this.polls++;
    this.sink.publish(events, upserts, removed);
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
      this.sink.publish(output.events, output.upserts, output.removed);
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
      id: randomUUID(),
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
