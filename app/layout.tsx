import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { ConnectionIndicator } from "@/components/live/connection-indicator";
import { LiveLocksProvider } from "@/components/live/live-locks-provider";
import "./globals.css";

export const metadata: Metadata = {
  title: "lockscope",
  description: "Every distributed lock in the fleet, live: holders, leases, waiters and hazards.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen font-sans">
        <LiveLocksProvider>
          <header className="sticky top-0 z-10 border-b border-slate-800 bg-slate-950/95 backdrop-blur">
            <div className="mx-auto flex max-w-screen-2xl items-center gap-6 px-4 py-2">
              <Link href="/" className="font-mono text-lg font-semibold tracking-tight text-slate-100">
                lock<span className="text-amber-400">scope</span>
              </Link>
              <nav className="flex gap-4 text-sm text-slate-400">
                <Link href="/" className="hover:text-slate-100">
                  Locks
                </Link>
              </nav>
              <div className="ml-auto">
                <ConnectionIndicator />
              </div>
            </div>
          </header>
          <main className="mx-auto max-w-screen-2xl px-4 py-4">{children}</main>
        </LiveLocksProvider>
      </body>
    </html>
  );
}
