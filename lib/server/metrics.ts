import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { LockEvent } from "../contract/lock";
import { isTakeover } from "./history";
import type { LiveState } from "./live-state";

/**
 * The event kinds counted by lockscope_lock_events_total: few and fixed, so Grafana can chart contention per backend
 * without a series per lock. A new owner after the previous lease ran out is a takeover, any other an owner change.
 */
export function eventKind(e: Pick<LockEvent, "type" | "detail">): string | null {
  if (isTakeover(e)) return "taken_over";
  switch (e.type) {
    case "acquired":
    case "released":
    case "expired":
    case "renewed":
    case "lost":
      return e.type;
    case "owner-changed":
      return "owner_changed";
    default:
      return null; // source-up/down are not lock events (lockscope_source_up says it)
  }
}

/**
 * Prometheus metrics for GET /api/metrics. Gauges are read from the live state at scrape time; the hold-time
 * histogram is fed by stored events as they arrive.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly holdSeconds: Histogram<"backend">;
  private readonly waitSeconds: Histogram<"backend">;
  private readonly lockEvents: Counter<"backend" | "kind">;
  private readonly storeWriteSeconds: Histogram<"provider">;
  private readonly storedEvents: Counter<"provider">;

  constructor(live: LiveState, openAlertsByRule: () => Map<string, number>) {
    const locks = new Gauge({
      name: "lockscope_locks_held",
      help: "Locks currently held, by backend and source.",
      labelNames: ["backend", "source"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const l of live.rawLocks()) locks.inc({ backend: l.backend, source: l.source });
      },
    });
    const waiters = new Gauge({
      name: "lockscope_lock_waiters",
      help: "Visible waiters behind held locks, by backend and source.",
      labelNames: ["backend", "source"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const l of live.rawLocks()) waiters.inc({ backend: l.backend, source: l.source }, l.waiters.length);
      },
    });
    const up = new Gauge({
      name: "lockscope_source_up",
      help: "1 when the agent reaches the source, 0 when it is down.",
      labelNames: ["kind", "source"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of live.sources()) up.set({ kind: s.kind, source: s.id }, s.up ? 1 : 0);
      },
    });
    const scan = new Gauge({
      name: "lockscope_agent_scan_duration_seconds",
      help: "Duration of the agent's last full scan of the source.",
      labelNames: ["kind", "source"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of live.sources())
          if (s.lastScanMs !== undefined) scan.set({ kind: s.kind, source: s.id }, s.lastScanMs / 1000);
      },
    });
    const sweep = new Gauge({
      name: "lockscope_agent_sweep_duration_seconds",
      help: "Redis in track mode: duration of the safety sweep's last round over every known lock.",
      labelNames: ["kind", "source"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of live.sources())
          if (s.lastSweepMs !== undefined) sweep.set({ kind: s.kind, source: s.id }, s.lastSweepMs / 1000);
      },
    });
    const alerts = new Gauge({
      name: "lockscope_alerts_firing",
      help: "Open (unresolved) alerts by rule.",
      labelNames: ["rule"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [rule, n] of openAlertsByRule()) alerts.set({ rule }, n);
      },
    });
    this.holdSeconds = new Histogram({
      name: "lockscope_hold_seconds",
      help: "How long locks were held, observed when a holding ends.",
      labelNames: ["backend"],
      buckets: [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
      registers: [this.registry],
    });
    this.waitSeconds = new Histogram({
      name: "lockscope_wait_seconds",
      help: "How long a new holder had waited, where the backend records queueing (ZooKeeper ctime, database waits).",
      labelNames: ["backend"],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
      registers: [this.registry],
    });
    this.lockEvents = new Counter({
      name: "lockscope_lock_events_total",
      help: "Lock events by backend and kind (acquired, released, expired, taken_over, owner_changed, renewed, lost).",
      labelNames: ["backend", "kind"],
      registers: [this.registry],
    });
    this.storeWriteSeconds = new Histogram({
      name: "lockscope_store_write_seconds",
      help: "Time to store one agent message's events (the agent's acknowledgement waits for it).",
      labelNames: ["provider"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    this.storedEvents = new Counter({
      name: "lockscope_store_events_total",
      help: "Events offered to the history store (new and replayed).",
      labelNames: ["provider"],
      registers: [this.registry],
    });
  }

  observeStoreWrite(provider: string, seconds: number, events: number): void {
    this.storeWriteSeconds.observe({ provider }, seconds);
    this.storedEvents.inc({ provider }, events);
  }

  observeEvents(events: readonly LockEvent[]): void {
    for (const e of events) {
      const kind = eventKind(e);
      if (kind) this.lockEvents.inc({ backend: e.backend, kind });
      const waited = e.detail?.waitedMs;
      if (typeof waited === "number" && waited >= 0) this.waitSeconds.observe({ backend: e.backend }, waited / 1000);
      const held = e.detail?.heldMs;
      if ((e.type === "released" || e.type === "expired" || e.type === "owner-changed") && typeof held === "number") {
        this.holdSeconds.observe({ backend: e.backend }, held / 1000);
      }
    }
  }
}
