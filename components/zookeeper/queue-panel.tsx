"use client";

import type { Lock } from "@/lib/contract/lock";
import { useNow } from "../live/live-locks-provider";
import { queueLength } from "./chain-model";
import { WaitChain } from "./wait-chain";

/** The contender queue of one ZooKeeper lock on its detail page: the same wait chain as the ZooKeeper view. */
export function QueuePanel({ lock }: { lock: Lock }) {
  const now = useNow(1000);
  if (!lock.zookeeper) return null;
  const waiting = queueLength(lock);
  return (
    <section data-testid="zk-queue-panel" className="space-y-2">
      <h2 className="text-sm font-semibold uppercase tracking-wide text-slate-400">
        Queue{" "}
        <span className="font-normal normal-case text-slate-400">
          {lock.zookeeper.recipe} · {waiting.toLocaleString("en-US")} waiting · watches{" "}
          {lock.zookeeper.watchesObserved ? "observed" : "inferred"}
        </span>
      </h2>
      <WaitChain lock={lock} now={now} headSize={50} />
    </section>
  );
}
