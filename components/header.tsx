"use client";

import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { canRelease, postJson, useSession } from "./auth/session-provider";
import { ConnectionIndicator } from "./live/connection-indicator";
import { ZoneToggle } from "./time/time";
import { useLiveLocks } from "./live/live-locks-provider";

const LINKS = [
  { href: "/", label: "Locks", operatorOnly: false },
  { href: "/fleet", label: "Fleet", operatorOnly: false },
  { href: "/redlock", label: "Redlock", operatorOnly: false },
  { href: "/zookeeper", label: "ZooKeeper", operatorOnly: false },
  { href: "/history", label: "History", operatorOnly: false },
  { href: "/alerts", label: "Alerts", operatorOnly: false },
  { href: "/audit", label: "Audit", operatorOnly: true },
];

export function Header() {
  const session = useSession();
  const { openAlerts } = useLiveLocks();
  const pathname = usePathname();
  const router = useRouter();
  const signOut = async () => {
    await postJson(session, "/api/auth/logout", {});
    router.replace("/login");
  };
  return (
    <header className="sticky top-0 z-10 border-b border-slate-800 bg-slate-950/95 backdrop-blur">
      {/* At 390 px the links take a row of their own and wrap; nothing is cut off or pushed off screen. */}
      <div
        className="mx-auto flex max-w-screen-2xl flex-wrap items-center gap-x-6 gap-y-1 px-4 py-2"
        data-testid="header-bar"
      >
        <Link href="/" className="font-mono text-lg font-semibold tracking-tight text-slate-100">
          lock<span className="text-amber-400">scope</span>
        </Link>
        <nav className="order-last flex w-full flex-wrap gap-x-4 gap-y-1 text-sm md:order-none md:w-auto">
          {LINKS.filter((l) => !l.operatorOnly || canRelease(session)).map((l) => {
            const active =
              l.href === "/" ? pathname === "/" || pathname.startsWith("/locks") : pathname.startsWith(l.href);
            return (
              <Link
                key={l.href}
                href={l.href}
                className={active ? "text-slate-100" : "text-slate-400 hover:text-slate-100"}
              >
                {l.label}
                {l.href === "/alerts" && openAlerts > 0 ? (
                  <span
                    data-testid="alert-badge"
                    className="ml-1 rounded-full bg-rose-600 px-1.5 text-xs font-semibold text-white"
                  >
                    {openAlerts}
                  </span>
                ) : null}
              </Link>
            );
          })}
        </nav>
        <div className="ml-auto flex flex-wrap items-center gap-x-4 gap-y-1">
          <ConnectionIndicator />
          <ZoneToggle />
          {session ? (
            <span className="text-xs text-slate-400" data-testid="signed-in-as">
              {session.name} <span className="text-slate-400">({session.role})</span>
              <button type="button" onClick={signOut} className="ml-3 text-slate-400 underline hover:text-slate-100">
                sign out
              </button>
            </span>
          ) : null}
        </div>
      </div>
    </header>
  );
}
