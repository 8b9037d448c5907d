"use client";

/** Redlock groups: node health and the resource × node grid (see the Redlock issue). */
export function RedlockView() {
  return <h1 className="text-lg font-semibold text-slate-100">Redlock groups</h1>;
}
