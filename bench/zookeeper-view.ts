/**
 * 5. ZooKeeper: one lock parent with 10,000 EPHEMERAL_SEQUENTIAL children (the seeds recipe, `Lock<seq>`), watched
 * by the real agent process: time until the dashboard shows the whole queue, how fast it follows a holder change,
 * and the agent's peak memory.
 */
import { existsSync } from "node:fs";
import { startAgent, type Dashboard } from "../tests/harness/stack";
import { CreateMode, startZookeeper, zkCreate, zkMkdirp, zkRemove } from "../tests/harness/zookeeper";
import type { Cleanup } from "./support/cleanup";
import { memoryKb, scriptProcess } from "./support/processes";
import { verdict, type Row, type SectionResult } from "./support/result";
import { mb, ms, seconds, sleep } from "./support/stats";
import type { UiViewer } from "./support/ui-socket";

const CHILDREN = 10_000;
const CREATE_BATCH = 1000;
const PARENT = "/bench/orders/ParentLock";
const STEADY_MS = 5000;
const TARGET_MB = 200;

function notMeasured(reason: string): SectionResult {
  return {
    id: "zookeeper",
    title: "ZooKeeper",
    status: "not-measured",
    rows: [
      {
        measure: `ZooKeeper lock parent with ${CHILDREN.toLocaleString("en")} children`,
        result: `not measured: ${reason}`,
      },
    ],
    notes: [reason],
    details: { reason },
  };
}

export async function measureZookeeper(
  ctx: { dashboard: Dashboard; viewer: UiViewer; cleanup: Cleanup },
  log: (line: string) => void,
): Promise<SectionResult> {
  if (!process.env.ZK_CLASSPATH && !existsSync("/usr/share/java/zookeeper.jar")) {
    return notMeasured("ZooKeeper is not installed (apt-get install -y zookeeper)");
  }
  log("starting ZooKeeper");
  const zk = await startZookeeper({ fourLetterWords: "all" });
  const stopZk = ctx.cleanup.add("zookeeper", () => zk.stop());
  try {
    const owner = await zk.client({ sessionTimeoutMs: 30_000 });
    await zkMkdirp(owner, PARENT);
    log(`creating ${CHILDREN.toLocaleString("en")} EPHEMERAL_SEQUENTIAL children of ${PARENT}`);
    let t = performance.now();
    const created: string[] = [];
    for (let i = 0; i < CHILDREN; i += CREATE_BATCH) {
      const n = Math.min(CREATE_BATCH, CHILDREN - i);
      created.push(
        ...(await Promise.all(
          Array.from({ length: n }, () => zkCreate(owner, `${PARENT}/Lock`, null, CreateMode.EPHEMERAL_SEQUENTIAL)),
        )),
      );
    }
    const createMs = performance.now() - t;
    created.sort();
    const base = (p: string) => p.slice(p.lastIndexOf("/") + 1);

    const agentId = "bench-zookeeper";
    const seen: { fullView?: { atMs: number; owner: string | null }; nextHolderAtMs?: number } = {};
    const unsubscribe = ctx.viewer.onLocks(
      (locks) => {
        for (const l of locks) {
          if (l.agentId !== agentId || l.resource !== PARENT) continue;
          if (!seen.fullView && Number(l.holder?.contenders) === CHILDREN)
            seen.fullView = { atMs: performance.now(), owner: l.owner };
          if (seen.nextHolderAtMs === undefined && l.owner === base(created[1]!))
            seen.nextHolderAtMs = performance.now();
        }
      },
      { backend: "zookeeper", limit: 10 },
    );
    // REDIS_URLS="" watches no Redis at all (the agent's default is the machine's 6379, which the bench never touches).
    t = performance.now();
    const agent = startAgent(ctx.dashboard.url, {
      REDIS_URLS: "",
      ZK_CONNECT: zk.connect,
      ZK_LOCK_PATHS: PARENT,
      AGENT_ID: agentId,
      POLL_INTERVAL_MS: "1000",
    });
    const stopAgent = ctx.cleanup.add("zookeeper agent", () => agent.stop());
    try {
      log("waiting for the full queue at the viewer");
      while (!seen.fullView && performance.now() - t < 90_000) {
        if (agent.process.exitCode !== null) throw new Error(`agent exited: ${agent.output().slice(-2000)}`);
        await sleep(50);
      }
      const view = seen.fullView;
      if (!view)
        throw new Error(
          `no lock with ${CHILDREN} contenders at the viewer within 90 s: ${agent.output().slice(-1500)}`,
        );
      const toFullViewMs = view.atMs - t;

      // The holder leaves: the waiter's watch fires, the agent polls that source at once, the viewer sees the next one.
      const removedAt = performance.now();
      await zkRemove(owner, created[0]!);
      while (seen.nextHolderAtMs === undefined && performance.now() - removedAt < 15_000) await sleep(10);
      const holderChangeMs = seen.nextHolderAtMs === undefined ? null : seen.nextHolderAtMs - removedAt;

      await sleep(STEADY_MS);
      const pid = scriptProcess(agent.process.pid!, "agent/main.ts");
      const mem = pid === null ? { hwmKb: null, rssKb: null } : memoryKb(pid);
      const source = ctx.viewer.source(agentId, `zookeeper://${zk.connect}`);
      const rows: Row[] = [
        {
          measure: `ZooKeeper: ${CHILDREN.toLocaleString("en")} contenders under one parent, agent spawn → full queue at the viewer`,
          result: `${seconds(toFullViewMs)} (holder ${view.owner ?? "?"}; agent's own full read ${ms(source?.lastScanMs ?? Number.NaN)})`,
        },
        {
          measure: "ZooKeeper: holder deleted → next holder at the viewer (watch-driven)",
          result: holderChangeMs === null ? "not seen within 15 s" : ms(holderChangeMs),
        },
        {
          measure: `ZooKeeper: agent peak RSS (VmHWM) with ${CHILDREN.toLocaleString("en")} contenders`,
          result: `${mb(mem.hwmKb)} (RSS now ${mb(mem.rssKb)})`,
          target: `≤ ${TARGET_MB} MB (same as Redis)`,
          verdict: verdict(mem.hwmKb !== null && mem.hwmKb / 1024 <= TARGET_MB),
        },
      ];
      return {
        id: "zookeeper",
        title: "ZooKeeper",
        status: "measured",
        rows,
        notes: [
          `One ZooKeeper 3.8 standalone server (tests/harness/zookeeper.ts: forceSync=no, four-letter words allowed); one client session created the ${CHILDREN.toLocaleString("en")} children in ${seconds(createMs)}, ${CREATE_BATCH} requests in flight at a time.`,
          "The agent process watches only this ZooKeeper (REDIS_URLS empty) with ZK_LOCK_PATHS set to the parent; spawn → full view includes tsx start-up, the session handshake, reading every child's data and stat with bounded concurrency, reading wchc/wchp, and delivery to the dashboard. The lock lists at most 1,000 contenders; the total is in holder.contenders.",
          "All children belong to one client session that sets no watches, as a bulk loader would; 10,000 real contenders would each hold a session and a watch on a predecessor, so the server's watch tables (wchc/wchp, read by the agent) would be much larger than here.",
        ],
        details: {
          children: CHILDREN,
          createMs,
          toFullViewMs,
          holderChangeMs,
          agentPid: pid,
          agentHwmKb: mem.hwmKb,
          agentRssKb: mem.rssKb,
          sourceLastScanMs: source?.lastScanMs ?? null,
        },
      };
    } finally {
      unsubscribe();
      await stopAgent();
    }
  } finally {
    await stopZk();
  }
}
