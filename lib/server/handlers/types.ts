import type { IncomingHttpHeaders } from "node:http";
import type { Authenticator, Principal } from "../auth/authenticator";
import type { Role } from "../auth/principals";
import type { LiveState } from "../live-state";
import type { RateLimiter } from "../rate-limit";
import type { HistoryStore } from "../store";
import type { AgentGateway } from "../agent-gateway";
import type { AlertEngine } from "../alerts/alert-engine";
import type { Metrics } from "../metrics";

export interface ApiRequest {
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
  principal: Principal | null;
  clientAddress: string;
  /** The parsed JSON body (bounded); throws a 400-worthy error on bad JSON. */
  json(): Promise<unknown>;
}

export interface ApiAnswer {
  status: number;
  body: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface ApiDeps {
  live: LiveState;
  store: HistoryStore;
  auth: Authenticator;
  agents: AgentGateway;
  releaseLimiter: RateLimiter;
  signInLimiter: RateLimiter;
  secureCookies: boolean;
  alerts: AlertEngine;
  metrics: Metrics;
  /** Tells browsers that alerts changed (after an acknowledgement). */
  onAlertsChanged: () => void;
}

export function fail(status: number, error: string, headers?: Record<string, string>): ApiAnswer {
  return { status, body: { error }, headers };
}

/** 401 when nobody is signed in, 403 when the role is too low; null when allowed. */
export function requireRole(req: ApiRequest, role: Role): ApiAnswer | null {
  if (!req.principal)
    return fail(401, "sign in or send Authorization: Bearer <token>", { "www-authenticate": "Bearer" });
  const rank = { viewer: 1, operator: 2, admin: 3 } as const;
  if (rank[req.principal.role] < rank[role]) {
    return fail(403, `${req.principal.name} is ${req.principal.role}; this needs ${role}`);
  }
  return null;
}
