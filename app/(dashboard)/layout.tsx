import type { ReactNode } from "react";
import { SessionProvider } from "@/components/auth/session-provider";
import { LiveLocksProvider } from "@/components/live/live-locks-provider";
import { AlertToasts } from "@/components/alerts/alert-toasts";
import { Header } from "@/components/header";
import { LiveFrame } from "@/components/live/live-frame";

/** Every signed-in page: one session, one live socket, one header. */
export default function DashboardLayout({ children }: { children: ReactNode }) {
  return (
    <SessionProvider>
      <LiveLocksProvider>
        {/* Keyboard users skip the header's navigation straight to the page (first focusable element). */}
        <a
          href="#main"
          className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-50 focus:rounded focus:bg-sky-600 focus:px-3 focus:py-1 focus:text-white"
        >
          Skip to content
        </a>
        <Header />
        <main id="main" tabIndex={-1} className="mx-auto max-w-screen-2xl px-4 py-4">
          <LiveFrame>{children}</LiveFrame>
        </main>
        <AlertToasts />
      </LiveLocksProvider>
    </SessionProvider>
  );
}
