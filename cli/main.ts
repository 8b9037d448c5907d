/**
 * `lockscope`: the dashboard's HTTP API in a terminal, for incidents and scripts. A table for people, one JSON
 * document with --json, errors in one line on stderr, and exit codes a script can branch on:
 * 0 ok, 1 refused or not found, 2 usage, 3 cannot reach the dashboard.
 */
import type { AlertsResponse } from "../lib/contract/alerts";
import type { EventsResponse, LockDetailResponse } from "../lib/contract/api";
import type { Lock } from "../lib/contract/lock";
import type { ReleaseRequestBody, ReleaseResult } from "../lib/contract/release";
import { createApiClient, HttpError, UnreachableError, type ApiClient } from "./api-client";
import { parseArgs, USAGE, UsageError, type Command, type Invocation } from "./args";
import { alertsTable, eventsTable, lockDetail, locksTable, matchesFilter, releaseText } from "./format";
import { watchLocks } from "./watch";

export const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const;

export interface Terminal {
  out(text: string): void;
  err(text: string): void;
  /** stdin and stdout are a terminal: a person can type the confirmation. */
  interactive: boolean;
  ask(question: string): Promise<string>;
}

/** The refusal outcomes of a release; everything but released and dry-run exits 1. */
const OK_OUTCOMES = new Set<ReleaseResult["outcome"]>(["released", "dry-run"]);
/** A page of /api/locks; the dashboard may or may not page (older ones send `{ locks }` only). */
interface LocksPage {
  generatedAt: string;
  total?: number;
  locks: Lock[];
  nextCursor?: string | null;
}
const MAX_PAGES = 200;

/** Every lock matching the filters, following the dashboard's pages when it pages. */
async function fetchLocks(
  api: ApiClient,
  f: { backend?: string; hazard?: string; query?: string },
): Promise<{ generatedAt: string; locks: Lock[] }> {
  const q = new URLSearchParams({ limit: "1000" });
  if (f.backend) q.set("backend", f.backend);
  if (f.hazard) q.set("hazard", f.hazard);
  if (f.query) q.set("q", f.query);
  const locks: Lock[] = [];
  let generatedAt = new Date().toISOString();
  for (let page = 0; page < MAX_PAGES; page++) {
    const body = await api.get<LocksPage>(`/api/locks?${q}`);
    if (!body || !Array.isArray(body.locks))
      throw new UnreachableError("the dashboard's /api/locks answer has no locks");
    if (page === 0) generatedAt = body.generatedAt;
    locks.push(...body.locks);
    if (!body.nextCursor) break;
    q.set("cursor", body.nextCursor);
  }
  return { generatedAt, locks: locks.filter((l) => matchesFilter(l, f)) };
}

function printJson(t: Terminal, value: unknown): void {
  t.out(`${JSON.stringify(value, null, 2)}\n`);
}

async function release(
  api: ApiClient,
  t: Terminal,
  inv: Invocation,
  c: Extract<Command, { name: "release" }>,
): Promise<number> {
  const id = encodeURIComponent(c.id);
  const detail = await api.get<LockDetailResponse>(`/api/locks/${id}`);
  const lock = detail.lock;
  if (!lock) {
    const result: ReleaseResult = {
      outcome: "nothing-to-do",
      message: "the lock is not held any more",
      plan: [],
      perNode: [],
    };
    if (inv.json) printJson(t, result);
    else t.err(`lockscope: nothing released: lock ${c.id} is not held any more\n`);
    return EXIT.refused;
  }
  const body: ReleaseRequestBody = { expectedOwner: c.owner, reason: c.reason };
  // The exact holding read just now pins the release, but only when it is the owner the operator named.
  if (lock.owner === c.owner) {
    body.expectedSince = lock.since;
    if (lock.ownerFingerprint) body.expectedFingerprint = lock.ownerFingerprint;
  }
  const post = (extra: Partial<ReleaseRequestBody>) =>
    api.post<ReleaseResult>(`/api/locks/${id}/release`, { ...body, ...extra }, (s) =>
      [400, 409, 422, 429, 502].includes(s),
    );

  if (!c.dryRun && !c.yes) {
    if (!t.interactive) {
      throw new UsageError(
        "release without --dry-run asks for a typed confirmation: run it on a terminal or add --yes",
      );
    }
    // The same steps as the dashboard's panel: a dry run shows what would be deleted where, then the typed name.
    const plan = await post({ dryRun: true });
    t.err(`${releaseText(plan.body)}\n`);
    if (plan.body.outcome !== "dry-run") return EXIT.refused;
    const typed = await t.ask(`type the resource name to release it (${lock.resource}): `);
    if (typed.trim() !== lock.resource) {
      t.err("lockscope: the name does not match: nothing released\n");
      return EXIT.refused;
    }
  }
  const { body: result } = await post(c.dryRun ? { dryRun: true } : { dryRun: false, confirm: lock.resource });
  if (inv.json) printJson(t, result);
  else if (OK_OUTCOMES.has(result.outcome)) t.out(`${releaseText(result)}\n`);
  else t.err(`lockscope: ${releaseText(result).replace(/\n\s*/g, "; ")}\n`);
  return OK_OUTCOMES.has(result.outcome) ? EXIT.ok : EXIT.refused;
}

async function execute(inv: Invocation, t: Terminal, api: ApiClient): Promise<number> {
  const c = inv.command;
  switch (c.name) {
    case "help":
      t.out(`${USAGE}\n`);
      return EXIT.ok;
    case "locks": {
      const { generatedAt, locks } = await fetchLocks(api, c);
      if (inv.json) printJson(t, { generatedAt, total: locks.length, locks });
      else t.out(`${locksTable(locks, Date.parse(generatedAt), Date.now())}\n`);
      return EXIT.ok;
    }
    case "lock": {
      const body = await api.get<LockDetailResponse>(`/api/locks/${encodeURIComponent(c.id)}`);
      if (inv.json) printJson(t, body);
      else t.out(`${lockDetail(body, Date.now())}\n`);
      return EXIT.ok;
    }
    case "release":
      return release(api, t, inv, c);
    case "alerts": {
      const body = await api.get<AlertsResponse>(`/api/alerts${c.state ? `?state=${c.state}` : ""}`);
      if (inv.json) printJson(t, body);
      else t.out(`${alertsTable(body.alerts)}\n`);
      return EXIT.ok;
    }
    case "events": {
      const q = new URLSearchParams();
      if (c.resource) q.set("resource", c.resource);
      if (c.since) q.set("since", c.since);
      if (c.limit) q.set("limit", String(c.limit));
      const body = await api.get<EventsResponse>(`/api/events${q.size ? `?${q}` : ""}`);
      if (inv.json) printJson(t, body);
      else t.out(`${eventsTable(body.events)}\n`);
      return EXIT.ok;
    }
    case "watch":
      return watchLocks(inv.url, inv.token, c, t);
  }
}

/** Runs one command line; never throws: every failure is one line on stderr and an exit code. */
export async function run(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  t: Terminal,
): Promise<number> {
  let inv: Invocation;
  try {
    inv = parseArgs(argv, env, Date.now());
  } catch (err) {
    t.err(`lockscope: ${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT.usage;
  }
  try {
    return await execute(inv, t, createApiClient(inv.url, inv.token));
  } catch (err) {
    const message = (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, " ");
    if (inv.json && err instanceof HttpError && err.body && typeof err.body === "object") printJson(t, err.body);
    t.err(`lockscope: ${message}\n`);
    if (err instanceof UsageError) return EXIT.usage;
    if (err instanceof UnreachableError) return EXIT.unreachable;
    return EXIT.refused;
  }
}
