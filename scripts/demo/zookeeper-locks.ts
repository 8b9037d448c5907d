/**
 * ZooKeeper lock clients for the demo, each following its recipe's node naming and waiting rule with real sessions
 * (node-zookeeper-client): the seeds' /ParentLock recipe, a Curator-style InterProcessMutex, a kazoo-style Lock,
 * and the seeds' simplest lock (one EPHEMERAL node per resource, the holder's name as its data). Several workers per
 * lock, so waiters queue behind the holder.
 */
import { randomUUID } from "node:crypto";
import zookeeper from "node-zookeeper-client";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rand = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));
const { CreateMode } = zookeeper;

function connect(connectString: string): Promise<zookeeper.Client> {
  return new Promise((resolve, reject) => {
    const c = zookeeper.createClient(connectString, { sessionTimeout: 10_000, spinDelay: 500 });
    const timer = setTimeout(() => reject(new Error(`no ZooKeeper session at ${connectString}`)), 15_000);
    c.once("connected", () => {
      clearTimeout(timer);
      resolve(c);
    });
    c.connect();
  });
}

const call = <T>(f: (cb: (err: Error | null, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => f((err, v) => (err ? reject(err) : resolve(v))));

async function mkdirp(c: zookeeper.Client, path: string): Promise<void> {
  await call<void>((cb) => c.mkdirp(path, (err) => cb(err, undefined)));
}

/** Resolves when `path` is deleted (or is already gone): the exists watch a waiter sets on its predecessor. */
function whenGone(c: zookeeper.Client, path: string): Promise<void> {
  return new Promise((resolve, reject) =>
    c.exists(
      path,
      () => resolve(),
      (err, stat) => (err ? reject(err) : stat ? undefined : resolve()),
    ),
  );
}

const seqOf = (name: string) => Number(/(\d{10})$/.exec(name)?.[1] ?? "NaN");

interface QueueRecipe {
  parent: string;
  /** The node's name prefix for one worker, before ZooKeeper's 10-digit sequence. */
  prefix(worker: number): string;
  data(worker: number): Buffer;
}

/** Lowest sequence holds; every waiter watches only the node just before its own (no herd). */
async function queueWorker(c: zookeeper.Client, r: QueueRecipe, worker: number, stopped: () => boolean) {
  await mkdirp(c, r.parent);
  while (!stopped()) {
    const mine = await call<string>((cb) =>
      c.create(`${r.parent}/${r.prefix(worker)}`, r.data(worker), CreateMode.EPHEMERAL_SEQUENTIAL, cb),
    );
    const myName = mine.slice(mine.lastIndexOf("/") + 1);
    for (;;) {
      const children = await call<string[]>((cb) => c.getChildren(r.parent, cb));
      const ahead = children.filter((n) => seqOf(n) < seqOf(myName)).sort((a, b) => seqOf(a) - seqOf(b));
      if (ahead.length === 0) break;
      await whenGone(c, `${r.parent}/${ahead[ahead.length - 1]}`);
    }
    await sleep(rand(4000, 12_000)); // the work under the lock
    await call<void>((cb) => c.remove(mine, -1, (err) => cb(err, undefined))).catch(() => undefined);
    await sleep(rand(1000, 5000));
  }
}

/** The seeds' simplest lock: create the EPHEMERAL node or wait for it to go; the holder's name is its data. */
async function simpleWorker(c: zookeeper.Client, path: string, name: string, stopped: () => boolean) {
  while (!stopped()) {
    try {
      await call<string>((cb) => c.create(path, Buffer.from(name), CreateMode.EPHEMERAL, cb));
      await sleep(rand(5000, 10_000));
      await call<void>((cb) => c.remove(path, -1, (err) => cb(err, undefined))).catch(() => undefined);
      await sleep(rand(1000, 3000));
    } catch {
      await whenGone(c, path).catch(() => sleep(1000));
    }
  }
}

export async function startZookeeperDemo(connectString: string): Promise<{ stop(): void }> {
  let stopped = false;
  const isStopped = () => stopped;
  const clients: zookeeper.Client[] = [];
  const session = async () => {
    const c = await connect(connectString);
    clients.push(c);
    return c;
  };
  const hex = () => randomUUID().replace(/-/g, "");
  const recipes: Array<{ recipe: QueueRecipe; workers: number }> = [
    { recipe: { parent: "/ParentLock", prefix: () => "Lock", data: () => Buffer.alloc(0) }, workers: 3 },
    {
      // Curator InterProcessMutex: `_c_<uuid>-lock-<seq>`, the client's IP as data
      recipe: {
        parent: "/services/billing/locks/invoice-run",
        prefix: () => `_c_${randomUUID()}-lock-`,
        data: () => Buffer.from("127.0.0.1"),
      },
      workers: 3,
    },
    {
      // kazoo Lock: `<32 hex>__lock__<seq>`, the identifier as data
      recipe: {
        parent: "/kazoo/locks/report-builder",
        prefix: () => `${hex()}__lock__`,
        data: (w) => Buffer.from(`report-worker-${w}`),
      },
      workers: 4,
    },
  ];
  for (const { recipe, workers } of recipes) {
    for (let w = 1; w <= workers; w++) {
      const c = await session();
      void queueWorker(c, recipe, w, isStopped).catch(() => undefined);
    }
  }
  for (const driver of ["driver-7", "driver-8", "driver-9"]) {
    const c = await session();
    void simpleWorker(c, "/product-lock-42", driver, isStopped).catch(() => undefined);
  }
  return {
    stop() {
      stopped = true;
      for (const c of clients) c.close();
    },
  };
}
