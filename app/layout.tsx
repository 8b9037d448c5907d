import type { Metadata } from "next";
import type { ReactNode } from "react";
import "./globals.css";

// Rendered per request, never prerendered: each response carries its own CSP nonce (set by lib/server/http-handler.ts),
// which Next.js can only put on the hydration scripts of a page it renders now.
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: "lockscope",
  description: "Every distributed lock in the fleet, live: holders, leases, waiters and hazards.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen font-sans">{children}</body>
    </html>
  );
}
