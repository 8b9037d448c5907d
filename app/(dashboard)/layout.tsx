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
        <Header />
        <main className="mx-auto max-w-screen-2xl px-4 py-4">
          <LiveFrame>{children}</LiveFrame>
        </main>
        <AlertToasts />
      </LiveLocksProvider>
    </SessionProvider>
  );
}
