import type { Backend, Lock, Severity, SourceStatus } from "../../contract/lock";

export interface AlertRulesConfig {
  /** Held longer than this raises held-too-long (0: off). */
  maxHoldMs: number;
  /** More waiters than this raises too-many-waiters (0: off). */
  maxWaiters: number;
  /** A waiter waiting longer than this raises waited-too-long (0: off). */
  maxWaitMs: number;
  /** Rule names switched off by the operator. */
  disabled: ReadonlySet<string>;
}

export const DEFAULT_ALERT_RULES: AlertRulesConfig = {
  maxHoldMs: 15 * 60_000,
  maxWaiters: 10,
  maxWaitMs: 5 * 60_000,
  disabled: new Set(),
};

/** A condition that holds now; an alert is open for each one, keyed by rule and lock (or source). */
export interface Condition {
  key: string;
  rule: string;
  severity: Severity;
  lockId: string | null;
  backend: Backend | null;
  source: string;
  resource: string | null;
  message: string;
}

/**
 * Hazard codes the agents report, grouped into the alert rules operators switch on and off. Hazards not listed
 * here raise an alert of their own name when they are critical.
 */
export const HAZARD_RULES: Record<string, string> = {
  "expired-while-held": "expired-while-held",
  "no-ttl": "no-ttl",
  "redisson-no-lease": "no-ttl",
  "redis-py-no-timeout": "no-ttl",
  "redlock-quorum-lost": "redlock-quorum-lost",
  "redlock-minority": "redlock-minority",
  "redlock-split": "redlock-minority",
  "redlock-clock-skew": "redlock-clock-skew",
  herd: "zk-herd",
  "stuck-waiter": "zk-stuck-waiter",
  "renewals-stopped": "renewals-stopped",
  "zombie-renewal": "zombie-renewal",
  "not-replicated": "not-replicated",
  "db-idle-in-transaction": "db-idle-in-transaction",
  "db-leaked-lock": "db-leaked-lock",
  "db-long-wait": "waited-too-long",
};

/** Hazards of a whole source that raise an alert on the source (rule name by code). */
export const SOURCE_HAZARD_RULES: Record<string, string> = {
  "too-many-locks": "too-many-locks",
};

function fmt(ms: number): string {
  return ms >= 120_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;
}

const lockBase = (lock: Lock) => ({
  lockId: lock.id,
  backend: lock.backend,
  source: lock.source,
  resource: lock.resource,
});

/** Rules whose condition (or message) changes with time alone, without a change of the lock. */
export const TIME_RULES: ReadonlySet<string> = new Set(["held-too-long", "waited-too-long"]);

type AddCondition = (c: Omit<Condition, "key">) => void;

/** Collects conditions, one per key (the first wins), leaving out disabled rules. */
export function conditionCollector(cfg: AlertRulesConfig): { add: AddCondition; out: Map<string, Condition> } {
  const out = new Map<string, Condition>();
  const add: AddCondition = (c) => {
    if (cfg.disabled.has(c.rule)) return;
    const key = `${c.rule}:${c.lockId ?? c.source}`;
    if (!out.has(key)) out.set(key, { ...c, key });
  };
  return { add, out };
}

/**
 * The conditions of one lock at `nowMs` (pure). Only held-too-long and waited-too-long depend on the time; the rest
 * change only when the lock does.
 */
export function lockConditions(lock: Lock, nowMs: number, cfg: AlertRulesConfig, add: AddCondition): void {
  // Evaluated for every changed lock (100,000 at scale after a snapshot, on the event loop the API shares): nothing
  // is allocated for a lock that raises nothing.
  for (const h of lock.hazards) {
    const rule = HAZARD_RULES[h.code] ?? (h.severity === "critical" ? h.code : null);
    if (rule) add({ ...lockBase(lock), rule, severity: h.severity, message: h.message });
  }
  const heldMs = nowMs - Date.parse(lock.since);
  if (cfg.maxHoldMs > 0 && heldMs > cfg.maxHoldMs) {
    add({
      ...lockBase(lock),
      rule: "held-too-long",
      severity: "warning",
      message: `Held for ${fmt(heldMs)} (limit ${fmt(cfg.maxHoldMs)}).`,
    });
  }
  if (cfg.maxWaiters > 0 && lock.waiters.length > cfg.maxWaiters) {
    add({
      ...lockBase(lock),
      rule: "too-many-waiters",
      severity: "warning",
      message: `${lock.waiters.length} waiters queue behind it (limit ${cfg.maxWaiters}).`,
    });
  }
  let oldestWait = 0;
  for (const w of lock.waiters) if (w.since) oldestWait = Math.max(oldestWait, nowMs - Date.parse(w.since));
  if (cfg.maxWaitMs > 0 && oldestWait > cfg.maxWaitMs) {
    add({
      ...lockBase(lock),
      rule: "waited-too-long",
      severity: "warning",
      message: `A waiter has waited ${fmt(oldestWait)} (limit ${fmt(cfg.maxWaitMs)}): the queue may be stuck.`,
    });
  }
}

/** The conditions of the sources (pure): their hazards and whether they are up. */
export function sourceConditions(sources: readonly SourceStatus[], add: AddCondition): void {
  for (const s of sources) {
    for (const h of s.hazards ?? []) {
      const rule = SOURCE_HAZARD_RULES[h.code];
      if (rule) {
        add({
          rule,
          severity: h.severity,
          lockId: null,
          backend: s.kind,
          source: s.id,
          resource: null,
          message: h.message,
        });
      }
    }
    if (!s.up) {
      add({
        rule: "source-down",
        severity: "critical",
        lockId: null,
        backend: s.kind,
        source: s.id,
        resource: null,
        message: `${s.id} is down: ${s.error ?? "no answer"}. Its locks are shown as last seen.`,
      });
    }
  }
}

/** Which alert conditions hold now, from every live lock and source (pure): the full pass. */
export function evaluateConditions(
  locks: Iterable<Lock>,
  sources: readonly SourceStatus[],
  nowMs: number,
  cfg: AlertRulesConfig,
): Condition[] {
  const { add, out } = conditionCollector(cfg);
  for (const lock of locks) lockConditions(lock, nowMs, cfg, add);
  sourceConditions(sources, add);
  return [...out.values()];
}
