/** Builders shared by the ZooKeeper unit tests: contender nodes as the source reads them. */
import type { NodeSample } from "../../agent/sources/zookeeper/queue";

export const T0 = Date.parse("2026-01-01T00:00:00Z");
export const UUID = (n: number) => `3f2a9c4e-1b2d-4c3e-9f8a-${String(n).padStart(12, "0")}`;
export const HEX = (n: number) => n.toString(16).padStart(32, "0");
/** A 10-digit sequence suffix; negative after the counter wrapped (`-000000001`). */
export const seq = (n: number) => (n < 0 ? `-${String(-n).padStart(9, "0")}` : String(n).padStart(10, "0"));

/** The i-th contender: its own session, created a second after the one before. */
export function node(name: string, i: number, opts: Partial<NodeSample> = {}): NodeSample {
  return {
    name,
    session: `0x${(0x1000 + i).toString(16)}`,
    ctimeMs: T0 + i * 1000,
    data: null,
    dataLength: 0,
    ...opts,
  };
}
