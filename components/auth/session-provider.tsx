"use client";

import { useRouter } from "next/navigation";
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";

export interface SessionInfo {
  name: string;
  role: "viewer" | "operator" | "admin";
  via: "session" | "token";
  csrfToken?: string;
}

const Ctx = createContext<SessionInfo | null>(null);

/** Who is signed in (and the CSRF token for writes); sends the browser to /login when the session is gone. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<SessionInfo | null>(null);
  const router = useRouter();
  useEffect(() => {
    let current = true;
    fetch("/api/session", { cache: "no-store" })
      .then(async (res) => {
        if (res.status === 401) {
          router.replace(`/login?next=${encodeURIComponent(window.location.pathname)}`);
          return;
        }
        if (res.ok && current) setSession((await res.json()) as SessionInfo);
      })
      .catch(() => undefined);
    return () => {
      current = false;
    };
  }, [router]);
  return <Ctx.Provider value={session}>{children}</Ctx.Provider>;
}

export function useSession(): SessionInfo | null {
  return useContext(Ctx);
}

export function canRelease(s: SessionInfo | null): boolean {
  return s?.role === "operator" || s?.role === "admin";
}

/** POST JSON with the session's CSRF token; returns status and parsed body. */
export async function postJson<T>(
  session: SessionInfo | null,
  url: string,
  body: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": session?.csrfToken ?? "" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as T };
}
