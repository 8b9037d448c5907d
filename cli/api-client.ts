/**
 * The command line's only I/O with the dashboard's HTTP API: one request at a time with a bearer token, and the
 * two ways that can fail told apart, since they map to different exit codes (3: not reached, 1: refused).
 */

/** The dashboard did not answer (connection refused, unknown host, timeout, not a lockscope answer): exit 3. */
export class UnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnreachableError";
  }
}

/** The dashboard answered with an error status: exit 1. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

export interface ApiClient {
  get<T>(pathAndQuery: string): Promise<T>;
  /** A POST whose error answers (409, 422, …) are returned with their status rather than thrown when `keep`. */
  post<T>(
    pathAndQuery: string,
    body: unknown,
    keep?: (status: number) => boolean,
  ): Promise<{ status: number; body: T }>;
}

/** Why a fetch failed, from undici's cause chain: ECONNREFUSED, ENOTFOUND, a timeout. */
export function describeFetchFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `no answer within ${timeoutMs / 1000} s`;
  const cause = e?.cause;
  if (cause?.code) return cause.code;
  return cause?.message ?? e?.message ?? String(err);
}

/** The message of an error answer: the API's `{ error }` or a release result's `{ message }`, else the status. */
export function errorMessage(status: number, body: unknown): string {
  const b = body as { error?: unknown; message?: unknown } | null;
  const text = typeof b?.error === "string" ? b.error : typeof b?.message === "string" ? b.message : null;
  const hint = status === 401 ? " (give an API token with --token or LOCKSCOPE_TOKEN)" : "";
  return `${text ?? `HTTP ${status}`}${hint}`;
}

export function createApiClient(baseUrl: string, token: string | null, timeoutMs = 15_000): ApiClient {
  async function call(method: string, p: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(`${baseUrl}${p}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "manual",
      });
    } catch (err) {
      throw new UnreachableError(`cannot reach the dashboard at ${baseUrl}: ${describeFetchFailure(err, timeoutMs)}`);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      // A proxy's error page or another server on that port: not the dashboard.
      throw new UnreachableError(`${baseUrl} answered HTTP ${res.status} without JSON: is it a lockscope dashboard?`);
    }
    return { status: res.status, body: parsed };
  }
  return {
    async get<T>(p: string): Promise<T> {
      const r = await call("GET", p);
      if (r.status < 200 || r.status >= 300) throw new HttpError(r.status, errorMessage(r.status, r.body), r.body);
      return r.body as T;
    },
    async post<T>(p: string, body: unknown, keep?: (status: number) => boolean) {
      const r = await call("POST", p, body);
      if ((r.status < 200 || r.status >= 300) && !keep?.(r.status)) {
        throw new HttpError(r.status, errorMessage(r.status, r.body), r.body);
      }
      return { status: r.status, body: r.body as T };
    },
  };
}
