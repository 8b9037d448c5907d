"use client";

import { useSearchParams } from "next/navigation";
import { useState, type FormEvent } from "react";
import { safeNext } from "./safe-next";

export function SignInForm() {
  const params = useSearchParams();
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await fetch("/api/auth/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name, password }),
      });
      if (res.ok) {
        // Only this origin: an attacker's link must not turn sign-in into a redirect to their site.
        window.location.assign(safeNext(params.get("next"), window.location.origin));
        return;
      }
      const body = (await res.json().catch(() => ({}))) as { error?: string };
      setError(body.error ?? `sign-in failed (HTTP ${res.status})`);
    } catch {
      setError("the dashboard did not answer");
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} className="w-80 space-y-4 rounded border border-slate-800 bg-slate-900/60 p-6">
      <h1 className="font-mono text-xl font-semibold text-slate-100">
        lock<span className="text-amber-400">scope</span>
      </h1>
      <label className="block text-sm text-slate-400">
        Name
        <input
          value={name}
          onChange={(e) => setName(e.target.value)}
          autoComplete="username"
          // The one thing to do on this page: at 3 a.m. the cursor is already where the name goes.
          autoFocus
          required
          className="mt-1 w-full rounded border border-slate-700 bg-slate-950 px-2 py-1.5 text-slate-100 focus:border-amber-400 focus:outline-none"
        />
      </label>
      <label className="block text-sm text-slate-400">
        Password
        <input
          type="password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          autoComplete="current-password"
          required
          className="mt-1 w-full rounded border border-slate-700 bg-slate-950 px-2 py-1.5 text-slate-100 focus:border-amber-400 focus:outline-none"
        />
      </label>
      {error ? (
        <p className="text-sm text-rose-300" role="alert">
          {error}
        </p>
      ) : null}
      <button
        type="submit"
        disabled={busy}
        className="w-full rounded bg-amber-500 px-3 py-1.5 text-sm font-semibold text-slate-950 hover:bg-amber-400 disabled:opacity-50"
      >
        {busy ? "Signing in…" : "Sign in"}
      </button>
      <p className="text-xs text-slate-400">
        With no users configured, the dashboard prints a one-time admin password at start.
      </p>
    </form>
  );
}
