"use client";

/** ZooKeeper lock parents: a wait-chain diagram per parent (see the ZooKeeper issue). */
export function ZookeeperView() {
  return <h1 className="text-lg font-semibold text-slate-100">ZooKeeper locks</h1>;
}
